import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../services';
import type { Principal } from '../application/api-keys';
import { AppError } from '../shared/errors';
import { hasSeveralValues, SignatureVerificationError } from '../signing/signature-verifier';
import { authenticate } from './auth';
import { ADCP_TRANSPORT_CODES, jsonRpcError, jsonRpcIdOf } from './json-rpc';
import { originCaching, publicOrigin } from './well-known';
import { codecForArgs } from '../wire/codecs';

/** What an agent request calls: the AdCP task and JSON-RPC method (for the signing policy), and the task's arguments. */
export interface AgentCall {
  operation?: string;
  protocolMethod?: string;
  args?: Record<string, unknown>;
}

/** Who calls the sales agent (MCP or A2A), or how the call is refused. */
export type AgentCaller = { principal: Principal } | { refused: (reply: FastifyReply) => FastifyReply };

/**
 * The caller of an agent endpoint (`path`: `/mcp`, `/a2a`). A signed request is judged by its
 * signature first: a valid one is the caller's credential, a bad one is refused whatever else it
 * carries, and an unsigned call the signing policy requires signed is refused before any bearer
 * token is looked at. Otherwise the bearer credential decides; none or a bad one is a 401 whose
 * `WWW-Authenticate` names the protected-resource metadata (MCP authorization, RFC 9728).
 * `call` names the AdCP operation and JSON-RPC method, for the signing policy.
 */
export async function agentCaller(app: App, req: FastifyRequest, path: string, call: AgentCall): Promise<AgentCaller> {
  let signer: Principal | undefined;
  if (app.requestSigning) {
    try {
      const outcome = await app.requestSigning.verify(req, `${publicOrigin(app, req)}${req.url}`, req.rawBody ?? '', call);
      if ('signer' in outcome) signer = outcome.signer;
    } catch (err) {
      if (!(err instanceof SignatureVerificationError)) throw err;
      return { refused: (reply) => signatureRefused(reply, err, req.body, call) };
    }
  }
  let principal: Principal | null;
  try {
    principal = await authenticate(req, app);
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'UNAUTHENTICATED') throw err;
    return { refused: (reply) => unauthorized(app, req, reply, path, call, 'invalid_token', err.message) };
  }
  if (signer && principal && principal.org !== signer.org) {
    const mismatch = new SignatureVerificationError('request_signature_key_unknown', '7', `the signing key is not one of ${principal.org}'s`);
    return { refused: (reply) => signatureRefused(reply, mismatch, req.body, call) };
  }
  principal ??= signer ?? null;
  if (!principal) return { refused: (reply) => unauthorized(app, req, reply, path, call, undefined, 'credentials are required: send an sk_ API key or an access token in the Authorization header') };
  if (!signer && app.requestSigning?.requiresSignature(principal.org)) {
    const unsigned = new SignatureVerificationError('request_signature_required', '0', `${principal.org} signs its calls: this one is unsigned`);
    return { refused: (reply) => signatureRefused(reply, unsigned, req.body, call) };
  }
  return { principal };
}

/**
 * A signed request whose Content-Type has two values is malformed (step 1 of the request
 * checklist): answered as such here, since the body parser would otherwise refuse the media type
 * (415) before the signature is looked at.
 */
export function refuseAmbiguousSignedBody(app: App, req: FastifyRequest, reply: FastifyReply, done: () => void): void {
  const contentType = req.headers['content-type'];
  if (!app.requestSigning || req.headers['signature-input'] === undefined || contentType === undefined || !hasSeveralValues(contentType)) return done();
  signatureRefused(reply, new SignatureVerificationError('request_signature_header_malformed', '1', 'Content-Type has more than one value'));
}

/**
 * A signature that does not verify: 401 with `WWW-Authenticate: Signature error="<code>"`
 * (security.mdx), answering the request's id when its body was read.
 */
function signatureRefused(reply: FastifyReply, err: SignatureVerificationError, body?: unknown, call: AgentCall = {}): FastifyReply {
  const message = `request signature refused: ${err.message}`;
  const args = call.args ?? {};
  const { codec, envelope } = codecForArgs(args);
  // An unsigned call whose signer must sign is missing its credential; any other signature was presented and refused.
  const refusal = new AppError('UNAUTHENTICATED', message, undefined, { credential: err.code === 'request_signature_required' ? 'missing' : 'rejected', signature_error: err.code });
  return reply
    .status(401)
    .header('www-authenticate', `Signature error="${err.code}"`)
    .send(jsonRpcError(jsonRpcIdOf(body), ADCP_TRANSPORT_CODES.AUTH_REQUIRED, message, { adcp_error: codec.error(call.operation ?? '', args, refusal), ...envelope }));
}

/**
 * RFC 6750 / RFC 9728: where a client finds how to get a token for this resource. The AdCP error
 * is in the release the call's arguments pin (3.1 tells a missing credential from a refused one).
 */
function unauthorized(app: App, req: FastifyRequest, reply: FastifyReply, path: string, call: AgentCall, error: string | undefined, message: string): FastifyReply {
  const metadata = `${publicOrigin(app, req)}/.well-known/oauth-protected-resource${path}`;
  const args = call.args ?? {};
  const { codec, envelope } = codecForArgs(args);
  const refusal = new AppError('UNAUTHENTICATED', message, undefined, { credential: error ? 'rejected' : 'missing' });
  const params = [`realm="adcp-gateway"`, ...(error ? [`error="${error}"`, `error_description="${message.replace(/["\\]/g, "'")}"`] : []), `resource_metadata="${metadata}"`];
  return reply
    .status(401)
    .header('www-authenticate', `Bearer ${params.join(', ')}`)
    .send(jsonRpcError(jsonRpcIdOf(req.body), ADCP_TRANSPORT_CODES.AUTH_REQUIRED, message, { adcp_error: codec.error(call.operation ?? '', args, refusal), ...envelope }));
}

/**
 * RFC 9728 protected-resource metadata for an agent endpoint, at
 * `/.well-known/oauth-protected-resource<path>`: where its tokens come from. The resource is the
 * endpoint's URL (`<origin><resource>`).
 */
export function registerProtectedResourceMetadata(fastify: FastifyInstance, app: App, path: string, resource: string, name: string): void {
  fastify.get(`/.well-known/oauth-protected-resource${path}`, async (req, reply) => {
    const metadata = app.oauth.protectedResourceMetadata();
    if (!metadata) return reply.status(503).header('retry-after', '1').send({ error: 'OAuth is not configured yet' });
    return originCaching(app, reply, 3600)
      .header('access-control-allow-origin', '*')
      .send({ ...metadata, resource: `${publicOrigin(app, req)}${resource}`, resource_name: name });
  });
}
