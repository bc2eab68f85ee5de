import { AppError } from '../../shared/errors';
import { assertNever, type Decider } from '../decider';

/** How a sender authenticates to one of our endpoints; fixed at registration (no fallback between modes). */
export type EndpointMode = 'rfc9421' | 'hmac-sha256' | 'bearer';

/**
 * A buyer-side webhook endpoint: where one seller agent (known by its brand.json domain and
 * agent id) sends this buyer's webhooks. The route token in its URL is an unguessable id; the
 * HMAC secret stays in the log (the receiver needs it), a Bearer token is kept only as a hash.
 */
export type EndpointEvent = {
  readonly type: 'WebhookEndpointRegistered';
  readonly data: {
    readonly endpoint_id: string;
    readonly owner: string;
    readonly agent_id: string;
    readonly sender_domain: string;
    readonly mode: EndpointMode;
    readonly hmac_secret?: string;
    readonly bearer_sha256?: string;
    /** Apply the `signing_keys[]` pin this publisher's adagents.json sets for the sender agent. */
    readonly pin_publisher_domain?: string;
    readonly at: string;
  };
};

export type EndpointCommand = { readonly type: 'RegisterEndpoint'; readonly data: EndpointEvent['data'] };
export type EndpointState = { readonly registered?: EndpointEvent['data'] };

export const endpointStream = (endpointId: string) => `webhook-endpoint-${endpointId}`;

export const endpointDecider: Decider<EndpointCommand, EndpointEvent, EndpointState> = {
  initialState: () => ({}),
  decide(command, state) {
    if (state.registered) throw new AppError('CONFLICT', `endpoint ${command.data.endpoint_id} exists`);
    return [{ type: 'WebhookEndpointRegistered', data: command.data }];
  },
  evolve(_state, event) {
    switch (event.type) {
      case 'WebhookEndpointRegistered':
        return { registered: event.data };
      default:
        return assertNever(event.type);
    }
  },
};

/**
 * One webhook as received and accepted (after verification): the first copy per (dedup scope,
 * idempotency_key), since its stream is named after that pair and appended at `no_stream`.
 */
export type ReceivedEvent = {
  readonly type: 'WebhookReceived';
  readonly data: {
    /** The sender the endpoint names (`<sender_domain>/<agent_id>`): a claim, shown to the buyer, never a key of dedup. */
    readonly sender: string;
    readonly endpoint_id: string;
    readonly owner: string;
    /**
     * Whose idempotency keys these are (and whose daily cap it counts in): the endpoint for the
     * legacy schemes (`endpoint:<id>`: the secret is the endpoint's), the verified signing key for
     * RFC 9421 (`jwk:<RFC 7638 thumbprint>`, shared by that key's webhooks to every endpoint).
     * Events of version 1 had none: the sender's name was the scope (`legacyDedupScope`).
     */
    readonly dedup_scope: string;
    readonly dedup_key: string;
    readonly format: 'mcp' | 'a2a';
    readonly body: string;
    readonly received_at: string;
  };
};

/** The scope version-1 WebhookReceived events were deduplicated in: the sender name the endpoint claimed. */
export const legacyDedupScope = (sender: string) => `sender:${sender}`;
