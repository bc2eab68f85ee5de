import { createHash } from 'node:crypto';
import { assertNever, type Decider } from '../decider';

/**
 * A buyer's first-party audience on one of its accounts (AdCP `sync_audiences`). Members arrive
 * as hashed identifiers; the seller matches them against its user graph when they arrive and
 * keeps no identifier: a member is kept as a fingerprint of its external_id (keyed by account and
 * audience), with the identifier types it brought and those that matched. Counts and status are
 * derived from the members, and carried on each event for the read model.
 */
export const ID_TYPES = ['hashed_email', 'hashed_phone', 'rampid', 'id5', 'uid2', 'euid', 'pairid', 'maid', 'other'] as const;
export type IdType = (typeof ID_TYPES)[number];

/** Matched members an audience needs before it can be targeted (AdCP `minimum_audience_size`). */
export const MINIMUM_AUDIENCE_SIZE = 100;

export interface Member {
  /** Fingerprint of the buyer's external_id. */
  readonly m: string;
  readonly types: readonly IdType[];
  readonly matched: readonly IdType[];
}

export interface AudienceTerms {
  readonly name?: string;
  readonly description?: string;
  readonly audience_type?: 'crm' | 'suppression' | 'lookalike_seed';
  readonly tags?: readonly string[];
  readonly consent_basis?: string;
}

export interface AudienceSummary {
  readonly status: 'ready' | 'too_small';
  readonly total_uploaded_count: number;
  readonly matched_count: number;
  readonly effective_match_rate: number;
  readonly match_breakdown: readonly { id_type: IdType; submitted: number; matched: number; match_rate: number }[];
}

interface Key {
  readonly account_id: string;
  readonly owner: string;
  readonly audience_id: string;
}

export type AudienceEvent =
  | { readonly type: 'AudienceSynced'; readonly data: Key & { readonly seller_id: string; readonly terms: AudienceTerms; readonly added: readonly Member[]; readonly removed: readonly string[]; readonly uploaded: number; readonly created: boolean; readonly summary: AudienceSummary; readonly at: string } }
  | { readonly type: 'AudienceDeleted'; readonly data: Key & { readonly at: string } };

export type AudienceCommand =
  | { readonly type: 'SyncAudience'; readonly key: Key; readonly terms: AudienceTerms; readonly add: readonly Member[]; readonly remove: readonly string[]; readonly now: string }
  | { readonly type: 'DeleteAudience'; readonly key: Key; readonly now: string };

export interface AudienceState {
  readonly exists: boolean;
  readonly terms: AudienceTerms;
  readonly members: ReadonlyMap<string, Member>;
  readonly summary?: AudienceSummary;
  readonly syncedAt?: string;
}

export const sellerIdOf = (accountId: string, audienceId: string) => `aud_${createHash('sha256').update(`${accountId}\u0000${audienceId}`).digest('base64url').slice(0, 22)}`;
export const audienceStream = (accountId: string, audienceId: string) => `audience-${sellerIdOf(accountId, audienceId).slice(4)}`;

/** The seller's handle on one member: never the buyer's id itself. */
export function memberFingerprint(accountId: string, audienceId: string, externalId: string): string {
  return createHash('sha256').update(`${accountId}\u0000${audienceId}\u0000${externalId}`).digest('base64url').slice(0, 22);
}

/** Share of each identifier type this platform's (simulated) user graph recognises. */
const GRAPH_COVERAGE: Readonly<Record<IdType, number>> = { hashed_email: 0.7, hashed_phone: 0.5, rampid: 0.6, id5: 0.4, uid2: 0.6, euid: 0.4, pairid: 0.3, maid: 0.5, other: 0 };

/** Whether the user graph knows one identifier value: a stable draw from the value itself. */
export function inUserGraph(type: IdType, value: string): boolean {
  return createHash('sha256').update(`graph\u0000${type}\u0000${value}`).digest()[0]! < GRAPH_COVERAGE[type] * 256;
}

function summarize(members: ReadonlyMap<string, Member>): AudienceSummary {
  const all = [...members.values()];
  const matched = all.filter((m) => m.matched.length > 0).length;
  const match_breakdown = ID_TYPES.flatMap((id_type) => {
    const submitted = all.filter((m) => m.types.includes(id_type)).length;
    if (submitted === 0) return [];
    const hits = all.filter((m) => m.matched.includes(id_type)).length;
    return [{ id_type, submitted, matched: hits, match_rate: Math.round((hits / submitted) * 10_000) / 10_000 }];
  });
  return {
    status: matched >= MINIMUM_AUDIENCE_SIZE ? 'ready' : 'too_small',
    total_uploaded_count: all.length,
    matched_count: matched,
    effective_match_rate: all.length ? Math.round((matched / all.length) * 10_000) / 10_000 : 0,
    match_breakdown,
  };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export const audienceDecider: Decider<AudienceCommand, AudienceEvent, AudienceState> = {
  initialState: () => ({ exists: false, terms: {}, members: new Map() }),
  decide(command, state) {
    switch (command.type) {
      case 'SyncAudience': {
        const { key, now } = command;
        const members = new Map(state.exists ? state.members : []);
        // A member both added and removed in one request is removed (AdCP: remove wins).
        const removing = new Set(command.remove);
        const added = command.add.filter((m) => !removing.has(m.m) && !same(members.get(m.m), m));
        const removed = [...removing].filter((m) => members.has(m));
        const terms = state.exists ? { ...state.terms, ...command.terms } : command.terms;
        if (state.exists && added.length === 0 && removed.length === 0 && same(terms, state.terms)) return [];
        for (const m of added) members.set(m.m, m);
        for (const m of removed) members.delete(m);
        return [
          {
            type: 'AudienceSynced',
            data: { ...key, seller_id: sellerIdOf(key.account_id, key.audience_id), terms, added, removed, uploaded: command.add.length, created: !state.exists, summary: summarize(members), at: now },
          },
        ];
      }
      case 'DeleteAudience':
        return state.exists ? [{ type: 'AudienceDeleted', data: { ...command.key, at: command.now } }] : [];
      default:
        return assertNever(command);
    }
  },
  evolve(state, event) {
    switch (event.type) {
      case 'AudienceSynced': {
        const members = new Map(state.exists ? state.members : []);
        for (const m of event.data.added) members.set(m.m, m);
        for (const m of event.data.removed) members.delete(m);
        return { exists: true, terms: event.data.terms, members, summary: event.data.summary, syncedAt: event.data.at };
      }
      case 'AudienceDeleted':
        return audienceDecider.initialState();
      default:
        return assertNever(event);
    }
  },
};
