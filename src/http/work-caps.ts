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
  list: TimedRequests;
}

/**
 * Every request gets the same time budget, so arrival order is deadline order: a list that
 * requests join at the tail and leave from anywhere (each knows its link) keeps them sorted
 * without a map or a heap, and the sweep stops at the first request still within its time.
 */
class TimedRequests {
  oldest: Timed | undefined;
  newest: Timed | undefined;

  join(req: FastifyRequest, reply: FastifyReply, at: number): void {
    const t: Timed = { req, reply, at, prev: this.newest, next: undefined, list: this };
    if (this.newest) this.newest.next = t;
    else this.oldest = t;
    this.newest = t;
    req.timed = t;
  }

  leave(t: Timed): void {
    if (t.prev) t.prev.next = t.next;
    else this.oldest = t.next;
    if (t.next) t.next.prev = t.prev;
    else this.newest = t.prev;
    t.req.timed = null;
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** This request's place among the unanswered ones (work caps), while it is timed. */
    timed: Timed | null;
  }
}

/**
 * A signal that aborts once nobody waits for the route's answer any more: the request was
 * answered by something else (its time ran out: 503) or its connection closed. Work a route
 * queues for later checks it, so the work of an abandoned request is never done.
 */
export function abandonment(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const res = reply.raw;
  // 'close' also follows the route's own answer, when aborting no longer matters.
  if (reply.sent || res.writableEnded || res.destroyed) controller.abort();
  else res.once('close', () => controller.abort());
  return controller.signal;
}

/**
 * For work that cannot be taken back once begun (a webhook being stored): the request leaves the
 * time budget, so from now on only its route answers it, with the work's outcome (a 503 sent
 * meanwhile would tell the client it was refused while its work was done). False when it is too
 * late: the request was answered already, or its connection is gone.
 */
export function claimAnswer(req: FastifyRequest, reply: FastifyReply): boolean {
  if (reply.sent || reply.raw.headersSent || reply.raw.destroyed) return false;
  if (req.timed) req.timed.list.leave(req.timed);
  return true;
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
  const timed = new TimedRequests();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (let t = timed.oldest; t && t.at <= now; t = t.next) {
      timed.leave(t);
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
    timed.join(req, reply, Date.now() + limits.requestTimeBudgetMs);
    done();
  });
  fastify.addHook('onClose', (_instance, done) => {
    clearInterval(sweep);
    done();
  });

  fastify.addHook('onSend', (req, reply, payload, done) => {
    // Answered: out of the sweep's way now, so a finished request and its reply are not kept
    // alive until their deadline.
    if (req.timed) timed.leave(req.timed);
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
