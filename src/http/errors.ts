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

/**
 * GraphQL over HTTP: a request that never reaches Apollo (bad JSON, too large, wrong type) still
 * answers a GraphQL response, `{errors:[{message, extensions:{code}}]}`, as Apollo's own request
 * errors do; a malformed request is `BAD_REQUEST`, Apollo's code for the same fault.
 */
export function sendGraphQLError(reply: FastifyReply, err: AppError): FastifyReply {
  errorHeaders(reply, err);
  const code = err.code === 'INVALID_REQUEST' ? 'BAD_REQUEST' : err.code;
  return reply.status(httpStatusOf[err.code]).send({ errors: [{ message: err.message, extensions: { code } }] });
}

/** Paths the embedded authorization server answers (the MCP SDK's router plus our sign-in form and JWKS). */
export const AUTHORIZATION_SERVER_PATHS = ['/.well-known/oauth-authorization-server', '/authorize', '/token', '/register', '/revoke', '/oauth/login', '/oauth/jwks.json'];

/** RFC 6749's error shape, for what is refused before the authorization server sees it. */
export function sendOAuthError(reply: FastifyReply, err: AppError): FastifyReply {
  errorHeaders(reply, err);
  const status = httpStatusOf[err.code];
  return reply.status(status).send({ error: status >= 500 ? 'temporarily_unavailable' : 'invalid_request', error_description: err.message });
}

/** The registry's paths, which answer errors in their own shape. */
export const isRegistryPath = (url: string) => /^\/api\/(registry|brands|storyboards)\//.test(url);

/**
 * JSON-RPC's error shape, for what is refused before the MCP server sees it (bad JSON, too large,
 * wrong content type): a parse error or an invalid request, with AdCP's error under `data`.
 */
export function sendJsonRpcError(reply: FastifyReply, err: AppError): FastifyReply {
  errorHeaders(reply, err);
  const status = httpStatusOf[err.code];
  const rpcCode = err.message.includes('not valid JSON') ? -32700 : status >= 500 ? -32603 : -32600;
  const adcpCode = status >= 500 ? 'SERVICE_UNAVAILABLE' : 'INVALID_REQUEST';
  return reply.status(status).send({ jsonrpc: '2.0', error: { code: rpcCode, message: err.message, data: { adcp_error: { code: adcpCode, message: err.message, recovery: status >= 500 ? 'transient' : 'correctable' } } }, id: null });
}

/** The MCP endpoint's paths. */
export const isMcpPath = (url: string) => /^\/mcp\/?(\?|$)/.test(url);

/** The error shape of the binding a URL belongs to: registry, GraphQL, OAuth, MCP, or the REST shim's. */
export function errorSenderFor(url: string): (reply: FastifyReply, err: AppError) => FastifyReply {
  if (isRegistryPath(url)) return sendRegistryError;
  if (isMcpPath(url)) return sendJsonRpcError;
  if (AUTHORIZATION_SERVER_PATHS.includes(url.split('?')[0]!)) return sendOAuthError;
  if (/^\/graphql(\?|$)/.test(url)) return sendGraphQLError;
  return sendError;
}

function errorHeaders(reply: FastifyReply, err: AppError): void {
  if (err.code === 'UNAUTHENTICATED') reply.header('WWW-Authenticate', 'Bearer');
  // Something we depend on is down (a rate-limit store, an issuer's keys): worth a retry soon.
  if (err.code === 'UNAVAILABLE') reply.header('Retry-After', '30');
}

/** A fault of ours (logged by the caller), masked in the shape of the URL's binding. */
export function internalErrorBody(url: string): Record<string, unknown> {
  const send = errorSenderFor(url);
  if (send === sendRegistryError) return { error: 'internal error' };
  if (send === sendGraphQLError) return { errors: [{ message: 'internal error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }] };
  if (send === sendOAuthError) return { error: 'server_error', error_description: 'internal error' };
  if (send === sendJsonRpcError) return { jsonrpc: '2.0', error: { code: -32603, message: 'internal error' }, id: null };
  return { error: { code: 'INTERNAL_ERROR', message: 'internal error' } };
}

/** Fastify's own errors (body too large, bad JSON…) mapped to AppErrors; anything else is unknown. */
export function fromFastifyError(err: { code?: string; statusCode?: number; message: string }): AppError | null {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('PAYLOAD_TOO_LARGE', 'request body exceeds the size limit');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('UNSUPPORTED_MEDIA_TYPE', 'unsupported content type');
    case 'FST_ERR_BAD_URL':
      return new AppError('INVALID_REQUEST', 'the URL is not valid percent-encoded UTF-8');
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
