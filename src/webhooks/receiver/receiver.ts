import { createHash, randomBytes, timingSafeEqual, type JsonWebKey } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { publisherQueries } from '../../../projections/publishers';
import { appendOnce, handleCommand, loadState } from '../../application/command-handler';
import { endpointDecider, endpointStream, type EndpointEvent, type EndpointMode, type ReceivedEvent } from '../../domain/receiver/receiver';
import type { EventStore } from '../../eventstore/port';
import type { ReadModelStore } from '../../readmodel/port';
import { AppError } from '../../shared/errors';
import type { OriginOverrides } from '../../shared/origin-overrides';
import { decodeUtf8, parseStorableJson, UnstorableJsonError } from '../../shared/storable-json';
import { checkLegacyHmac, weakLegacySecret } from '../../signing/legacy-hmac';
import { parseStrictJson } from '../../signing/strict-json';
import { lowerHeaders, spendWebhookNonce, verifyWebhook, WebhookVerificationError, type VerifiedWebhook, type VerifierOptions, type WebhookErrorCode } from '../../signing/webhook-verifier';
import { CpuLane, LaneRefusal, type LaneTicket } from '../../shared/cpu-lane';
import { detectFormat, envelopeError, type EnvelopeFormat } from '../../domain/receiver/envelope';
import { DailyCap } from './daily-cap';
import { endpointScope, signingKeyScope } from './dedup-scope';
import { JwksResolver } from './jwks-resolver';
import { DatabaseReplayStore } from './replay-store';

export interface ReceiverOptions {
  overrides: OriginOverrides;
  /** Accepted webhooks per dedup scope (an endpoint, or a verified signing key) per UTC day before 429 (bounds what one credential puts in the log). */
  maxPerScopePerDay?: number;
  /** Live nonces one sender key may hold at one endpoint (default: AdCP's recommended 100,000). */
  noncesPerKey?: number;
  /** Large bodies that may wait for the CPU lane at once; one more is answered 503 at once. */
  laneWaiting?: number;
}

export interface InboundWebhook {
  method: string;
  /** The URL the sender signed: this gateway's public origin plus the request path. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  agentId: string;
  routeToken: string;
  /** Aborts when the request no longer waits for this answer (answered already, or its client gone): no more work is done for it. */
  signal?: AbortSignal;
  /**
   * Called once the webhook is accepted, just before it is stored: false when its request may no
   * longer be answered with the outcome (then nothing is stored); true makes the answer the store's
   * outcome, whatever else would answer the request meanwhile (a webhook refused is never stored).
   */
  claim?: () => boolean;
}

export interface ReceiverAnswer {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest();

/** Bodies above this take the CPU lane for their JSON checks (~1 ms of them per 100 KB). */
const LARGE_BODY_BYTES = 64 * 1024;

/**
 * Large bodies that may wait for the lane at once. A 1 MB body holds it for ~20-40 ms of steps and
 * rests, so the last of 32 waits a second or two, well within the time one request may take; past
 * that a sender is told to come back rather than queued for longer than its answer is worth.
 */
const LANE_WAITING = 32;

/** Seconds a sender refused for a full lane is asked to wait: the lane drains in about that. */
const LANE_FULL_RETRY_SECONDS = 2;

/** The answer to a request abandoned before it was stored: nobody reads it (its request was answered, or its client left). */
const ABANDONED: ReceiverAnswer = { status: 503, body: { error: { code: 'UNAVAILABLE', message: 'the request was answered before the webhook could be handled' } } };

/** A webhook past verification and its envelope checks, before dedup. */
interface Admitted {
  payload: Record<string, any>;
  format: EnvelopeFormat | undefined;
  /** Its RFC 9421 signature (its nonce not yet spent); undefined for the legacy schemes. */
  verified: VerifiedWebhook | undefined;
  /** Whose idempotency keys and daily cap these are (ReceivedEvent.dedup_scope). */
  scope: string;
  /** The body as text (valid UTF-8: what the sender sent, unaltered). */
  text: string;
}

const unauthorized = (code: WebhookErrorCode | 'webhook_signature_invalid', message: string): ReceiverAnswer => ({
  status: 401,
  body: { error: { code, message } },
  headers: { 'www-authenticate': `Signature error="${code}"` },
});

/**
 * The buyer side of webhooks: endpoints registered per seller agent, and the handling of what
 * arrives at them. Verification first (RFC 9421 with keys from the sender's brand.json, or the
 * legacy scheme the endpoint was registered with: never a fallback between them), then the
 * envelope, then dedup by (scope, idempotency_key), which is the append itself: the first copy's
 * stream is created at `no_stream`, so duplicates, across instances and restarts, find it taken
 * and are answered 200. Projections apply what was accepted, after the answer.
 *
 * The scope is what verification proved, never the sender name an endpoint claims (any buyer
 * may register an endpoint naming any sender): for the legacy schemes the endpoint (whoever
 * holds its secret), for RFC 9421 the public key the signature verified under, so one seller's
 * retries to a buyer's endpoints dedupe together and no other party's webhooks can reach them.
 */
export class WebhookReceiver {
  private endpoints = new LRUCache<string, EndpointEvent['data']>({ max: 10_000, ttl: 60_000 });
  private readonly lane: CpuLane;
  private readonly keys: JwksResolver;

  private constructor(
    private readonly store: EventStore,
    private readonly readModels: ReadModelStore,
    private readonly replay: DatabaseReplayStore,
    private readonly cap: DailyCap,
    private readonly options: ReceiverOptions,
  ) {
    this.keys = new JwksResolver(options.overrides);
    this.lane = new CpuLane(options.laneWaiting ?? LANE_WAITING);
  }

  /** Large bodies waiting for the CPU lane now (for /metrics). */
  get laneWaiting(): number {
    return this.lane.waitingCount;
  }

  static async open(store: EventStore, readModels: ReadModelStore, options: ReceiverOptions): Promise<WebhookReceiver> {
    return new WebhookReceiver(store, readModels, await DatabaseReplayStore.open(readModels), await DailyCap.open(readModels), options);
  }

  async registerEndpoint(
    owner: string,
    input: { agentId: string; senderDomain: string; mode: EndpointMode; secret?: string; pinPublisherDomain?: string },
    ctx: { now: string; principal?: string },
  ): Promise<{ endpoint_id: string; agent_id: string; path_template: string }> {
    if (!/^[a-z0-9_]{1,100}$/.test(input.agentId)) throw new AppError('VALIDATION_ERROR', 'agentId must match ^[a-z0-9_]+$ (brand.json agents[].id)', 'agentId');
    if (!/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/.test(input.senderDomain)) throw new AppError('VALIDATION_ERROR', 'senderDomain must be a DNS name such as seller.example', 'senderDomain');
    if (input.mode !== 'rfc9421') {
      const weak = input.secret === undefined ? 'is required for the legacy schemes' : weakLegacySecret(input.secret);
      if (weak) throw new AppError('VALIDATION_ERROR', `secret ${weak}`, 'secret');
    }
    const endpointId = randomBytes(16).toString('base64url');
    await handleCommand(this.store, endpointStream(endpointId), endpointDecider, {
      type: 'RegisterEndpoint',
      data: {
        endpoint_id: endpointId,
        owner,
        agent_id: input.agentId,
        sender_domain: input.senderDomain,
        mode: input.mode,
        ...(input.mode === 'hmac-sha256' ? { hmac_secret: input.secret } : {}),
        ...(input.mode === 'bearer' ? { bearer_sha256: sha256(input.secret!).toString('hex') } : {}),
        ...(input.pinPublisherDomain ? { pin_publisher_domain: input.pinPublisherDomain.toLowerCase() } : {}),
        at: ctx.now,
      },
    }, ctx);
    return { endpoint_id: endpointId, agent_id: input.agentId, path_template: `/webhooks/{task_type}/${input.agentId}/${endpointId}` };
  }

  private async endpoint(routeToken: string): Promise<EndpointEvent['data'] | undefined> {
    const hit = this.endpoints.get(routeToken);
    if (hit) return hit;
    if (!/^[A-Za-z0-9_-]{16,64}$/.test(routeToken)) return undefined;
    const { state } = await loadState(this.store, endpointStream(routeToken), endpointDecider);
    if (state.registered) this.endpoints.set(routeToken, state.registered);
    return state.registered;
  }

  /**
   * The `signing_keys[]` the pinned publisher's adagents.json (as last revalidated) sets for the
   * sender agent, as verification keys; undefined when it sets none (the JWKS applies).
   */
  private async pinnedKeys(endpoint: EndpointEvent['data']): Promise<Map<string, JsonWebKey> | undefined> {
    const agentUrl = await this.keys.agentUrl(endpoint.sender_domain, endpoint.agent_id);
    if (!agentUrl) return undefined;
    const authorization = await publisherQueries.agent(this.readModels, endpoint.pin_publisher_domain!, agentUrl);
    const keys = Array.isArray(authorization?.signing_keys) ? (authorization!.signing_keys as Record<string, unknown>[]) : [];
    if (keys.length === 0) return undefined;
    // A pinned key is a verification key for webhooks by the publisher's say-so.
    return new Map(keys.filter((k) => typeof k.kid === 'string' && !k.revoked_at).map((k) => [k.kid as string, { use: 'sig', key_ops: ['verify'], adcp_use: 'request-signing', ...k } as JsonWebKey]));
  }

  async receive(req: InboundWebhook): Promise<ReceiverAnswer> {
    const endpoint = await this.endpoint(req.routeToken);
    if (!endpoint || endpoint.agent_id !== req.agentId) return { status: 404, body: { error: { code: 'NOT_FOUND', message: 'no such webhook endpoint' } } };
    const sender = `${endpoint.sender_domain}/${endpoint.agent_id}`;
    // An RFC 9421 signature's nonce is spent only once the webhook is accepted (below), in this
    // endpoint's scope: nonces and their cap belong to the verified sender at this endpoint, never
    // to a kid any sender may publish.
    const replay = { replay: this.replay, replayScope: `webhook:${endpoint.endpoint_id}:` };
    // A large body's JSON checks take milliseconds: they queue in the lane, a step per turn.
    const lane = req.body.length > LARGE_BODY_BYTES ? this.lane.ticket(req.signal) : undefined;
    let admitted: ReceiverAnswer | Admitted;
    try {
      admitted = await this.admit(req, endpoint, replay, lane);
    } catch (err) {
      if (!(err instanceof LaneRefusal)) throw err;
      if (err.reason === 'abandoned') return ABANDONED;
      return {
        status: 503,
        body: { error: { code: 'UNAVAILABLE', message: `the receiver has as many large webhooks waiting as it takes at once; try again in ${LANE_FULL_RETRY_SECONDS} s` } },
        headers: { 'retry-after': String(LANE_FULL_RETRY_SECONDS) },
      };
    } finally {
      lane?.done();
    }
    if ('status' in admitted) return admitted;
    const { payload, format, verified, scope } = admitted;
    let dedupKey: string;
    if (format === 'a2a') {
      // A2A Task / TaskStatusUpdateEvent carry no idempotency_key: one state change is one event
      // (a Task names itself by `id`, a status update its task by `taskId`).
      dedupKey = `a2a:${payload.id ?? payload.taskId}:${payload.status.state}:${payload.status.timestamp ?? ''}`;
    } else {
      dedupKey = payload.idempotency_key as string;
    }
    const now = new Date();
    const stream = `received-${sha256(`${scope}\u0000${dedupKey}`).toString('base64url').slice(0, 32)}`;
    // A place in the scope's count for today, taken before anything is spent; given back below
    // unless the webhook is stored.
    if (!(await this.cap.take(scope, now, this.options.maxPerScopePerDay ?? 100_000))) {
      // A retry of one already stored is still told so (else its sender retries all day).
      if ((await this.store.readStream(stream, { limit: 1 })).length > 0) return { status: 200, body: { status: 'duplicate' } };
      return { status: 429, body: { error: { code: 'RATE_LIMITED', message: 'too many webhooks from this sender today (UTC)' } }, headers: { 'retry-after': String(DailyCap.secondsLeft(now)) } };
    }
    let first = false;
    try {
      // From here the webhook is stored: only if its request still waits for the outcome, and then
      // nothing else may answer it (a sender told 503 must not find its webhook taken).
      if (req.signal?.aborted || (req.claim && !req.claim())) return ABANDONED;
      if (verified) {
        try {
          await spendWebhookNonce(verified, replay);
        } catch (err) {
          if (err instanceof WebhookVerificationError) return unauthorized(err.code, err.message);
          throw err;
        }
      }
      const received: ReceivedEvent = {
        type: 'WebhookReceived',
        data: { sender, endpoint_id: endpoint.endpoint_id, owner: endpoint.owner, dedup_scope: scope, dedup_key: dedupKey, format: format ?? 'mcp', body: admitted.text, received_at: now.toISOString() },
      };
      // A retry or a replay with a fresh signature finds the first copy there, and it stays.
      first = await appendOnce(this.store, stream, [received]);
      return { status: 200, body: { status: first ? 'accepted' : 'duplicate' } };
    } finally {
      if (!first) await this.cap.release(scope, now);
    }
  }

  /**
   * Verification, in the mode the endpoint was registered with, then the body as JSON the log can
   * store, then the envelope: the webhook as the receiver will take it, or the answer refusing it.
   */
  private async admit(req: InboundWebhook, endpoint: EndpointEvent['data'], replay: Pick<VerifierOptions, 'replay' | 'replayScope'>, lane: LaneTicket | undefined): Promise<ReceiverAnswer | Admitted> {
    const headers = lowerHeaders(req.headers);
    const has = (name: string) => headers.has(name);
    let verified: VerifiedWebhook | undefined;
    let parsed: { value: unknown } | undefined;
    let scope: string;
    const notUtf8 = { status: 400, body: { error: { code: 'webhook_body_malformed', message: 'body is not valid UTF-8' } } };
    let text: string | undefined;
    if (endpoint.mode === 'rfc9421') {
      if (!has('signature') && has('x-adcp-signature')) return unauthorized('webhook_mode_mismatch', 'this endpoint expects RFC 9421 signatures');
      try {
        const pins = endpoint.pin_publisher_domain ? await this.pinnedKeys(endpoint) : undefined;
        // The URL is built from this gateway's origin, so Host is not compared with it.
        const { host: _host, ...signed } = Object.fromEntries(headers);
        const resolve = pins ? async (kid: string) => pins.get(kid) : (kid: string) => this.keys.resolve(endpoint.sender_domain, endpoint.agent_id, kid);
        // The key the signature verified under: what the webhook's dedup scope is named after.
        let key: JsonWebKey | undefined;
        verified = await verifyWebhook(
          { method: req.method, url: req.url, headers: signed, body: req.body },
          {
            // A publisher's pin is authoritative: only its keys verify, whatever the JWKS says.
            resolveKey: async (kid) => (key = await resolve(kid)),
            ...replay,
            deferNonce: true,
            ...(this.options.noncesPerKey ? { perKeyidCap: this.options.noncesPerKey } : {}),
            ...(lane ? { beforeBodyChecks: lane.step } : {}),
          },
        );
        parsed = verified.parsedBody;
        scope = await signingKeyScope(key!);
      } catch (err) {
        if (err instanceof WebhookVerificationError) return unauthorized(err.code, err.message);
        if (err instanceof LaneRefusal) throw err; // refused its turn in the lane: receive() answers
        return { status: 503, body: { error: { code: 'KEYS_UNAVAILABLE', message: `the sender's keys could not be fetched: ${(err as Error).message}` } }, headers: { 'retry-after': '30' } };
      }
    } else {
      // Whoever holds this endpoint's secret: nothing says who that is beyond this endpoint.
      scope = endpointScope(endpoint.endpoint_id);
      if (has('signature') && !has('x-adcp-signature') && endpoint.mode === 'hmac-sha256') return unauthorized('webhook_mode_mismatch', 'this endpoint expects HMAC-SHA256');
      if (endpoint.mode === 'hmac-sha256') {
        const failure = checkLegacyHmac(endpoint.hmac_secret!, { signature: headers.get('x-adcp-signature'), timestamp: headers.get('x-adcp-timestamp') }, req.body);
        if (failure) return unauthorized('webhook_signature_invalid', `legacy HMAC: ${failure}`);
      } else {
        const presented = /^Bearer\s+(\S+)$/i.exec(headers.get('authorization') ?? '')?.[1];
        const expected = Buffer.from(endpoint.bearer_sha256!, 'hex');
        if (!presented || !timingSafeEqual(sha256(presented), expected)) return unauthorized('webhook_signature_invalid', 'bearer token does not match');
      }
      await lane?.step();
      try {
        text = decodeUtf8(req.body);
      } catch {
        return notUtf8;
      }
      try {
        const strict = parseStrictJson(text);
        if (strict.duplicates.length > 0) return { status: 400, body: { error: { code: 'webhook_body_malformed', message: 'duplicate JSON object keys' } } };
        parsed = { value: strict.value };
      } catch {
        return { status: 400, body: { error: { code: 'webhook_body_malformed', message: 'body is not JSON' } } };
      }
    }

    // The envelope (the strict-JSON step's parse, not a second one), from the body as sent: bytes
    // that are not UTF-8 would be stored altered (read as U+FFFD), so they are refused.
    await lane?.step();
    if (text === undefined) {
      try {
        text = decodeUtf8(req.body);
      } catch {
        return notUtf8;
      }
    }
    let payload: Record<string, any>;
    try {
      payload = parseStorableJson(text, parsed) as Record<string, any>;
    } catch (err) {
      return { status: 400, body: { error: { code: 'webhook_body_malformed', message: err instanceof UnstorableJsonError ? `body ${err.message}` : 'body is not JSON' } } };
    }
    const format = detectFormat(payload);
    if (format !== 'a2a') {
      const problem = envelopeError(payload);
      if (problem) return { status: 400, body: { error: { code: problem, message: 'not an AdCP webhook envelope' } } };
    }
    return { payload, format, verified, scope, text };
  }
}
