import type { FastifyReply } from 'fastify';
import { AppError, httpStatusOf } from '../shared/errors';

/** The REST error shape: `{error:{code,message,field?}}`. */
export function sendError(reply: FastifyReply, err: AppError, extra: Record<string, unknown> = {}): FastifyReply {
  errorHeaders(reply, err);
  return reply.status(httpStatusOf[err.code]).send({
    error: { code: err.code, message: err.message, ...(err.field ? { field: err.field } : {}) },
    ...extra,
  });
}

/** The registry's error shape (spec §7): `{error: string}`, with the same statuses and headers. */
export function sendRegistryError(reply: FastifyReply, err: AppError): FastifyReply {
  errorHeaders(reply, err);
  return reply.status(httpStatusOf[err.code]).send({ error: err.message });
}

/** The registry's paths, which answer errors in their own shape. */
export const isRegistryPath = (url: string) => /^\/api\/(registry|brands|storyboards)\//.test(url);

function errorHeaders(reply: FastifyReply, err: AppError): void {
  if (err.code === 'UNAUTHENTICATED') reply.header('WWW-Authenticate', 'Bearer');
  // Something we depend on is down (a rate-limit store, an issuer's keys): worth a retry soon.
  if (err.code === 'UNAVAILABLE') reply.header('Retry-After', '30');
}

/** Fastify's own errors (body too large, bad JSON…) mapped to AppErrors; anything else is unknown. */
export function fromFastifyError(err: { code?: string; statusCode?: number; message: string }): AppError | null {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('PAYLOAD_TOO_LARGE', 'request body exceeds the size limit');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('UNSUPPORTED_MEDIA_TYPE', 'unsupported content type');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('INVALID_REQUEST', 'request body is not valid JSON');
    default:
      if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
        return new AppError(err.statusCode === 413 ? 'PAYLOAD_TOO_LARGE' : 'INVALID_REQUEST', err.message);
      }
      return null;
  }
}
