import type { FastifyReply } from 'fastify';
import { AppError, httpStatusOf, retryAfterOf } from '../shared/errors';
import { adcpError as adcpErrorOf } from '../wire/adcp3/errors';

/** An error as one binding answers it: status, headers and body. */
export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

type Shape = (err: AppError, status: number) => Record<string, unknown>;

/** The REST error shape: `{error:{code,message,field?}}`. */
const restShape: Shape = (err) => ({ error: { code: err.code, message: err.message, ...(err.field ? { field: err.field } : {}) } });

/** The registry's error shape (spec §7): `{error: string}`; a rate-limit answer adds `retry_after`. */
const registryShape: Shape = (err) => ({ error: err.message, ...(err.code === 'RATE_LIMITED' ? { retry_after: retryAfterOf(err) } : {}) });

/**
 * GraphQL over HTTP: a request that never reaches Apollo (bad JSON, too large, wrong type) still
 * answers a GraphQL response, `{errors:[{message, extensions:{code}}]}`, as Apollo's own request
 * errors do; a malformed request is `BAD_REQUEST`, Apollo's code for the same fault.
 */
const graphqlShape: Shape = (err) => ({ errors: [{ message: err.message, extensions: { code: err.code === 'INVALID_REQUEST' ? 'BAD_REQUEST' : err.code } }] });

/** RFC 6749's error shape, for what is refused before the authorization server sees it. */
const oauthShape: Shape = (err, status) => ({ error: status >= 500 ? 'temporarily_unavailable' : 'invalid_request', error_description: err.message });

/**
 * JSON-RPC's error shape, for what is refused before the MCP or A2A handler sees it (bad JSON, too large,
 * wrong content type, a limit): a parse error or an invalid request, with AdCP's error under `data`.
 */
const jsonRpcShape: Shape = (err, status) => {
  const rpcCode = err.message.includes('not valid JSON') ? -32700 : status >= 500 ? -32603 : -32600;
  const adcpError =
    err.code === 'RATE_LIMITED'
      ? adcpErrorOf(err)
      : { code: status >= 500 ? 'SERVICE_UNAVAILABLE' : 'INVALID_REQUEST', message: err.message, recovery: status >= 500 ? 'transient' : 'correctable' };
  return { jsonrpc: '2.0', error: { code: rpcCode, message: err.message, data: { adcp_error: adcpError } }, id: null };
};

/** Paths the embedded authorization server answers (the MCP SDK's router plus our sign-in form and JWKS). */
export const AUTHORIZATION_SERVER_PATHS = ['/.well-known/oauth-authorization-server', '/authorize', '/token', '/register', '/revoke', '/oauth/login', '/oauth/jwks.json'];

/** The registry's paths, which answer errors in their own shape. */
export const isRegistryPath = (url: string) => /^\/api\/(registry|brands|storyboards)\//.test(url);

/** The JSON-RPC endpoints' paths: MCP's and A2A's (also at the agent's base URL). */
export const isJsonRpcPath = (url: string) => /^\/((mcp|a2a)\/?)?(\?|$)/.test(url);

/** The error shape of the binding a URL belongs to: registry, GraphQL, OAuth, MCP, or the REST shim's. */
function shapeFor(url: string): Shape {
  if (isRegistryPath(url)) return registryShape;
  if (isJsonRpcPath(url)) return jsonRpcShape;
  if (AUTHORIZATION_SERVER_PATHS.includes(url.split('?')[0]!)) return oauthShape;
  if (/^\/graphql(\?|$)/.test(url)) return graphqlShape;
  return restShape;
}

/**
 * RFC 6750 §3's challenge for an UNAUTHENTICATED error: `Bearer`, plus `error="invalid_token"`
 * and its description when a credential was presented and did not verify.
 */
export function bearerChallenge(err: AppError): string {
  if (err.details?.bearer_error !== 'invalid_token') return 'Bearer';
  // A quoted-string of visible ASCII: the description is ours, but a header must never break on it.
  return `Bearer error="invalid_token", error_description="${err.message.replace(/[^\x20-\x7e]/g, '?').replace(/["\\]/g, "'")}"`;
}

/** How the binding a URL belongs to answers an error. */
export function errorAnswerFor(url: string, err: AppError): ErrorAnswer {
  const status = httpStatusOf[err.code];
  const headers: Record<string, string> = {};
  if (err.code === 'UNAUTHENTICATED') headers['www-authenticate'] = bearerChallenge(err);
  // Something we depend on is down (a rate-limit store, an issuer's keys): worth a retry soon.
  if (err.code === 'UNAVAILABLE') headers['retry-after'] = '30';
  if (err.code === 'RATE_LIMITED') headers['retry-after'] = String(retryAfterOf(err));
  return { status, headers, body: shapeFor(url)(err, status) };
}

function sendAnswer(reply: FastifyReply, answer: ErrorAnswer, extra: Record<string, unknown> = {}): FastifyReply {
  return reply.status(answer.status).headers(answer.headers).send({ ...answer.body, ...extra });
}

/** The REST error shape, with members of the request to echo beside it (its `context`). */
export function sendError(reply: FastifyReply, err: AppError, extra: Record<string, unknown> = {}): FastifyReply {
  return sendAnswer(reply, errorAnswerFor('/api/tasks', err), extra);
}

/** The registry's error shape, for routes that answer registry errors outside the registry paths' hooks. */
export function sendRegistryError(reply: FastifyReply, err: AppError): FastifyReply {
  return sendAnswer(reply, errorAnswerFor('/api/registry/', err));
}

/** Answers an error in the shape of the URL's binding. */
export function errorSenderFor(url: string): (reply: FastifyReply, err: AppError) => FastifyReply {
  return (reply, err) => sendAnswer(reply, errorAnswerFor(url, err));
}

/** A fault of ours (logged by the caller), masked in the shape of the URL's binding. */
export function internalErrorBody(url: string): Record<string, unknown> {
  const shape = shapeFor(url);
  if (shape === registryShape) return { error: 'internal error' };
  if (shape === graphqlShape) return { errors: [{ message: 'internal error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }] };
  if (shape === oauthShape) return { error: 'server_error', error_description: 'internal error' };
  if (shape === jsonRpcShape) return { jsonrpc: '2.0', error: { code: -32603, message: 'internal error' }, id: null };
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
