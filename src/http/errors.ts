import type { FastifyReply } from 'fastify';
import { AppError, httpStatusOf, retryAfterOf } from '../shared/errors';
import { adcpError as adcpErrorOf } from '../wire/adcp3/errors';
import { adcpTransportCodeOf, INTERNAL_ERROR, INVALID_REQUEST, jsonRpcError, jsonRpcIdOf, jsonRpcIdOfUnreadBody, PARSE_ERROR, type JsonRpcId } from './json-rpc';

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
 * JSON-RPC's error shape, for what is refused before the MCP or A2A handler sees it (bad JSON, too
 * large, wrong content type, a limit): a parse error, an invalid request, or one of AdCP's reserved
 * transport codes (a limit, a dependency down), with AdCP's error under `data.adcp_error`. It names
 * the request's id when the body told it.
 */
const jsonRpcShape = (err: AppError, status: number, id?: JsonRpcId) => {
  const adcpError =
    err.code === 'RATE_LIMITED' || err.code === 'UNAVAILABLE' || err.code === 'UNAUTHENTICATED'
      ? adcpErrorOf(err)
      : { code: status >= 500 ? 'SERVICE_UNAVAILABLE' : 'INVALID_REQUEST', message: err.message, recovery: status >= 500 ? 'transient' : 'correctable' };
  const rpcCode = err.message.includes('not valid JSON') ? PARSE_ERROR : (adcpTransportCodeOf(adcpError.code) ?? (status >= 500 ? INTERNAL_ERROR : INVALID_REQUEST));
  return jsonRpcError(id, rpcCode, err.message, { adcp_error: adcpError });
};

/**
 * AdCP's transport errors a client reads from the JSON-RPC answer to its request. MCP's and A2A's
 * clients (the official SDKs, and @adcp/sdk over them) read no body from a non-2xx answer, so a
 * refusal naming the request is answered 200, as every JSON-RPC response is there; its
 * `Retry-After` and `RateLimit` headers stay. A credential refusal keeps its 401 (MCP
 * authorization: the client starts its OAuth flow from it), and a refusal without an id (the body
 * unread, too large, not JSON) keeps its HTTP status.
 */
const ANSWERED_IN_BAND: ReadonlySet<string> = new Set(['RATE_LIMITED', 'UNAVAILABLE']);

/** Paths the embedded authorization server answers (the MCP SDK's router plus our sign-in form and JWKS). */
export const AUTHORIZATION_SERVER_PATHS = ['/.well-known/oauth-authorization-server', '/authorize', '/token', '/register', '/revoke', '/oauth/login', '/oauth/jwks.json'];

/** The registry's paths, which answer errors in their own shape. */
export const isRegistryPath = (url: string) => /^\/api\/(registry|brands|storyboards)\//.test(url);

/** The JSON-RPC endpoints' paths: MCP's and A2A's (also at the agent's base URL). */
export const isJsonRpcPath = (url: string) => /^\/((mcp|a2a)\/?)?(\?|$)/.test(url);

/** The error shape of the binding a URL belongs to: registry, GraphQL, OAuth, or the REST shim's (MCP's and A2A's: jsonRpcShape). */
function shapeFor(url: string): Shape {
  if (isRegistryPath(url)) return registryShape;
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

/**
 * How the binding a URL belongs to answers an error. `requestBody`, when read, names the
 * JSON-RPC request a refusal on MCP or A2A answers.
 */
export function errorAnswerFor(url: string, err: AppError, requestBody?: unknown): ErrorAnswer {
  const status = httpStatusOf[err.code];
  const headers: Record<string, string> = {};
  if (err.code === 'UNAUTHENTICATED') headers['www-authenticate'] = bearerChallenge(err);
  // Something we depend on is down (a rate-limit store, an issuer's keys): worth a retry soon.
  if (err.code === 'UNAVAILABLE') headers['retry-after'] = '30';
  if (err.code === 'RATE_LIMITED') headers['retry-after'] = String(retryAfterOf(err));
  if (!isJsonRpcPath(url)) return { status, headers, body: shapeFor(url)(err, status) };
  const id = jsonRpcIdOf(requestBody);
  return { status: id !== undefined && ANSWERED_IN_BAND.has(err.code) ? 200 : status, headers, body: jsonRpcShape(err, status, id) };
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

/**
 * Answers an error in the shape of the URL's binding. On MCP and A2A the answer names the
 * request's id: from its body when read, else (a refusal before the body is read, as a rate limit
 * answers) from the body read here, when small; the reply is then sent once it is.
 */
export function errorSenderFor(url: string): (reply: FastifyReply, err: AppError) => FastifyReply {
  if (!isJsonRpcPath(url)) return (reply, err) => sendAnswer(reply, errorAnswerFor(url, err));
  return (reply, err) => {
    const req = reply.request;
    if (req.body !== undefined || req.raw.readableDidRead || req.raw.readableEnded) return sendAnswer(reply, errorAnswerFor(url, err, req.body));
    void jsonRpcIdOfUnreadBody(req.raw).then((id) => {
      if (!reply.sent) sendAnswer(reply, errorAnswerFor(url, err, id === undefined ? undefined : { id }));
    });
    // Unsent for now: a reply is a thenable that settles once it is sent, so an error handler returning it waits.
    return reply;
  };
}

/** A fault of ours (logged by the caller), masked in the shape of the URL's binding. */
export function internalErrorBody(url: string): Record<string, unknown> {
  const shape = shapeFor(url);
  if (shape === registryShape) return { error: 'internal error' };
  if (shape === graphqlShape) return { errors: [{ message: 'internal error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }] };
  if (shape === oauthShape) return { error: 'server_error', error_description: 'internal error' };
  if (isJsonRpcPath(url)) return jsonRpcError(null, INTERNAL_ERROR, 'internal error');
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
