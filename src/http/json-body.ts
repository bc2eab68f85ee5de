import type { FastifyInstance, FastifyRequest } from 'fastify';
import { jsonNestingDepth, MAX_JSON_DEPTH } from '../shared/json-depth';
import { hasNulEscape } from '../shared/nul';
import { AppError } from '../shared/errors';
import { FORBIDDEN_KEY_MESSAGE } from '../shared/forbidden-keys';

type Done = (err: Error | null, body?: unknown) => void;

/**
 * JSON bodies as Fastify parses them (proto and constructor poisoning refused), but no deeper
 * than MAX_JSON_DEPTH (a request nested thousands of levels would overflow later walks of it) and
 * without U+0000 (the log refuses it: PostgreSQL cannot store it). The text is kept as received
 * (`rawBody`), for what must be checked against the exact bytes (a signed request's digest).
 *
 * `forbiddenKeys: 'flag'` (MCP): a `__proto__` or `constructor.prototype` key is dropped and the
 * request marked (`forbiddenKeys`), so the binding can refuse it in its own error shape (a tool
 * error naming the problem) rather than as a body that does not parse, which it is not.
 * `'refuse'` (REST, GraphQL, the registry): such a body is refused as VALIDATION_ERROR in those
 * words, not as invalid JSON.
 */
export function strictJsonParser(fastify: FastifyInstance, options: { forbiddenKeys: 'refuse' | 'flag' } = { forbiddenKeys: 'refuse' }): (req: FastifyRequest, body: string | Buffer, done: Done) => void {
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  const dropForbidden = fastify.getDefaultJsonParser('remove', 'remove');
  return (req, raw, done) => {
    const body = raw as string;
    if (jsonNestingDepth(body) > MAX_JSON_DEPTH) return done(new AppError('INVALID_REQUEST', `request body nests deeper than ${MAX_JSON_DEPTH} levels`), undefined);
    if (hasNulEscape(body)) return done(new AppError('INVALID_REQUEST', 'request body contains U+0000 (NUL), which no field accepts'), undefined);
    req.rawBody = body;
    parseJson(req, body, (err, value) => {
      if (!err) return done(null, value);
      // Fastify reports both failures alike: what parses once the keys are dropped had only them wrong.
      dropForbidden(req, body, (again, dropped) => {
        if (again) return done(err);
        if (options.forbiddenKeys === 'refuse') return done(new AppError('VALIDATION_ERROR', FORBIDDEN_KEY_MESSAGE), undefined);
        req.forbiddenKeys = true;
        done(null, dropped);
      });
    });
  };
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The body carried `__proto__` / `constructor.prototype` keys, dropped by the parser. */
    forbiddenKeys?: boolean;
  }
}
