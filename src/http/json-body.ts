import type { FastifyInstance, FastifyRequest } from 'fastify';
import { jsonNestingDepth, MAX_JSON_DEPTH } from '../shared/json-depth';
import { hasNulEscape } from '../shared/nul';
import { AppError } from '../shared/errors';

type Done = (err: Error | null, body?: unknown) => void;

/**
 * JSON bodies as Fastify parses them (proto and constructor poisoning refused), but no deeper
 * than MAX_JSON_DEPTH (a request nested thousands of levels would overflow later walks of it) and
 * without U+0000 (the log refuses it: PostgreSQL cannot store it). The text is kept as received
 * (`rawBody`), for what must be checked against the exact bytes (a signed request's digest).
 */
export function strictJsonParser(fastify: FastifyInstance): (req: FastifyRequest, body: string | Buffer, done: Done) => void {
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  return (req, raw, done) => {
    const body = raw as string;
    if (jsonNestingDepth(body) > MAX_JSON_DEPTH) return done(new AppError('INVALID_REQUEST', `request body nests deeper than ${MAX_JSON_DEPTH} levels`), undefined);
    if (hasNulEscape(body)) return done(new AppError('INVALID_REQUEST', 'request body contains U+0000 (NUL), which no field accepts'), undefined);
    req.rawBody = body;
    parseJson(req, body, done);
  };
}
