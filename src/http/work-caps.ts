import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ResourceLimits } from '../config';
import { AppError } from '../shared/errors';
import { errorAnswerFor, errorSenderFor } from './errors';

/** How often overdue requests are looked for: one timer for all of them, not one per request. */
const SWEEP_MS = 100;

/** A request being timed: a link in the list of unanswered requests, oldest first. */
interface Timed {
  req: FastifyRequest;
  reply: FastifyReply;
  /** When its time is up (ms since the epoch). */
  at: number;
  prev: Timed | undefined;
  next: Timed | undefined;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** This request's place among the unanswered ones (work caps), while it is timed. */
    timed: Timed | null;
  }
}

/**
 * Caps on the work one request may make the gateway do, on every binding:
 *
 * - **time**: a request still unanswered after `requestTimeBudgetMs` is answered 503 with
 *   Retry-After and its connection closed, so a client never waits on a stalled dependency
 *   without end, nor holds a socket by sending slowly (the late answer, if one comes, is dropped
 *   and logged);
 * - **size**: an answer larger than `maxResponseBytes` is replaced by an error asking for less
 *   (RESPONSE_TOO_LARGE, 422), so one request cannot make the gateway stream gigabytes.
 */
export function registerWorkCaps(fastify: FastifyInstance, limits: Pick<ResourceLimits, 'requestTimeBudgetMs' | 'maxResponseBytes'>): void {
  // Every request gets the same time budget, so arrival order is deadline order: a list that
  // requests join at the tail and leave from anywhere (each knows its link) keeps them sorted
  // without a map or a heap, and the sweep stops at the first request still within its time.
  let oldest: Timed | undefined;
  let newest: Timed | undefined;
  const leave = (t: Timed) => {
    if (t.prev) t.prev.next = t.next;
    else oldest = t.next;
    if (t.next) t.next.prev = t.prev;
    else newest = t.prev;
    t.req.timed = null;
  };
  const sweep = setInterval(() => {
    const now = Date.now();
    for (let t = oldest; t && t.at <= now; t = t.next) {
      leave(t);
      const { req, reply } = t;
      // Answered without onSend (a hijacked reply, a socket gone): nothing left to time.
      if (reply.sent || reply.raw.headersSent) continue;
      req.log.warn({ url: req.url, budgetMs: limits.requestTimeBudgetMs }, 'request over its time budget: answered 503');
      // The connection ends with the answer: a body still trickling in (a slow upload) would
      // otherwise hold the socket open for as long as its sender likes.
      reply.header('connection', 'close');
      errorSenderFor(req.url)(reply, new AppError('UNAVAILABLE', `the request took longer than ${limits.requestTimeBudgetMs} ms, the most one request may take; try again later`));
    }
  }, SWEEP_MS);
  sweep.unref();

  fastify.decorateRequest('timed', null);
  fastify.addHook('onRequest', (req, reply, done) => {
    const t: Timed = { req, reply, at: Date.now() + limits.requestTimeBudgetMs, prev: newest, next: undefined };
    if (newest) newest.next = t;
    else oldest = t;
    newest = t;
    req.timed = t;
    done();
  });
  fastify.addHook('onClose', (_instance, done) => {
    clearInterval(sweep);
    done();
  });

  fastify.addHook('onSend', (req, reply, payload, done) => {
    // Answered: out of the sweep's way now, so a finished request and its reply are not kept
    // alive until their deadline.
    if (req.timed) leave(req.timed);
    // What the request cost the gateway, for clients pacing themselves and for the limits' tests.
    reply.header('server-timing', `app;dur=${Math.round(reply.elapsedTime * 10) / 10}`);
    // A string's UTF-8 size is at most 3 bytes per UTF-16 unit: most answers need no count at all.
    const size = typeof payload === 'string' ? (payload.length * 3 <= limits.maxResponseBytes ? 0 : Buffer.byteLength(payload)) : Buffer.isBuffer(payload) ? payload.length : 0;
    if (size <= limits.maxResponseBytes) return done(null, payload);
    req.log.warn({ url: req.url, size, limit: limits.maxResponseBytes }, 'answer over the response size limit: replaced by an error');
    const err = new AppError('RESPONSE_TOO_LARGE', `the answer would be ${size} bytes, more than ${limits.maxResponseBytes}, the most one answer may be; ask for fewer items or fields`);
    // onSend hands back a payload: the error in the binding's shape, serialized here.
    const answer = errorAnswerFor(req.url, err);
    reply.status(answer.status).headers(answer.headers).header('content-type', 'application/json; charset=utf-8');
    done(null, JSON.stringify(answer.body));
  });
}
