import { z } from 'zod';
import { audienceQueries } from '../../../projections/audiences';
import {
  audienceDecider,
  audienceStream,
  ID_TYPES,
  inUserGraph,
  MINIMUM_AUDIENCE_SIZE,
  memberFingerprint,
  sellerIdOf,
  type AudienceState,
  type AudienceSummary,
  type AudienceTerms,
  type IdType,
  type Member,
} from '../../domain/audience/audience';
import { handleCommand } from '../command-handler';
import { withIdempotency } from '../idempotency';
import { resolveAccount } from '../accounts';
import { idempotencyKeyInput, sha256HexInput } from '../validation';
import { defineTask } from './context';


const member = z
  .object({
    external_id: z.string().min(1).max(255),
    hashed_email: sha256HexInput.optional(),
    hashed_phone: sha256HexInput.optional(),
    uids: z.array(z.object({ type: z.enum(ID_TYPES.filter((t) => t !== 'hashed_email' && t !== 'hashed_phone') as [string, ...string[]]), value: z.string().min(1).max(1000) }).passthrough()).min(1).max(20).optional(),
  })
  .passthrough()
  .refine((m) => m.hashed_email !== undefined || m.hashed_phone !== undefined || m.uids !== undefined, { message: 'needs at least one identifier: hashed_email, hashed_phone or uids' });

const audience = z
  .object({
    audience_id: z.string().min(1).max(255),
    name: z.string().min(1).max(500).optional(),
    description: z.string().max(2000).optional(),
    audience_type: z.enum(['crm', 'suppression', 'lookalike_seed']).optional(),
    tags: z.array(z.string().min(1).max(100)).max(50).optional(),
    add: z.array(member).max(10_000).optional(),
    remove: z.array(member).max(10_000).optional(),
    delete: z.boolean().optional(),
    consent_basis: z.string().min(1).max(64).optional(),
  })
  .passthrough();

const syncInput = z
  .object({
    account: z.unknown(),
    audiences: z.array(audience).min(1).max(100).optional(),
    delete_missing: z.boolean().optional(),
    idempotency_key: idempotencyKeyInput,
  })
  .passthrough()
  .superRefine((r, ctx) => {
    if (r.account === undefined) ctx.addIssue({ code: 'custom', path: ['account'], message: 'is required: audiences belong to an account' });
    if (r.delete_missing && !r.audiences) ctx.addIssue({ code: 'custom', path: ['delete_missing'], message: 'needs an audiences array (without one it would delete every audience)' });
    const ids = (r.audiences ?? []).map((a) => a.audience_id);
    const dup = ids.findIndex((id, i) => ids.indexOf(id) !== i);
    if (dup >= 0) ctx.addIssue({ code: 'custom', path: ['audiences', dup, 'audience_id'], message: 'appears twice in this request' });
  });

type MemberInput = z.infer<typeof member>;

/** One member as the seller keeps it: matched now against the user graph, then forgotten but for its fingerprint. */
function matchMember(accountId: string, audienceId: string, m: MemberInput): Member {
  const ids: [IdType, string][] = [
    ...(m.hashed_email ? [['hashed_email', m.hashed_email] as [IdType, string]] : []),
    ...(m.hashed_phone ? [['hashed_phone', m.hashed_phone] as [IdType, string]] : []),
    ...(m.uids ?? []).map((u) => [u.type as IdType, u.value] as [IdType, string]),
  ];
  const types = [...new Set(ids.map(([t]) => t))];
  const matched = [...new Set(ids.filter(([t, v]) => inUserGraph(t, v)).map(([t]) => t))];
  return { m: memberFingerprint(accountId, audienceId, m.external_id), types, matched };
}

function resultOf(audienceId: string, sellerId: string, terms: AudienceTerms, summary: AudienceSummary, syncedAt: string, action: string, uploaded: number) {
  return {
    audience_id: audienceId,
    ...(terms.name ? { name: terms.name } : {}),
    seller_id: sellerId,
    action,
    status: summary.status,
    uploaded_count: uploaded,
    total_uploaded_count: summary.total_uploaded_count,
    matched_count: summary.matched_count,
    effective_match_rate: summary.effective_match_rate,
    ...(summary.match_breakdown.length ? { match_breakdown: summary.match_breakdown } : {}),
    last_synced_at: syncedAt,
    ...(summary.status === 'too_small' ? { minimum_size: MINIMUM_AUDIENCE_SIZE } : {}),
  };
}

const termsOf = (a: z.infer<typeof audience>): AudienceTerms => ({
  ...(a.name !== undefined ? { name: a.name } : {}),
  ...(a.description !== undefined ? { description: a.description } : {}),
  ...(a.audience_type !== undefined ? { audience_type: a.audience_type } : {}),
  ...(a.tags !== undefined ? { tags: a.tags } : {}),
  ...(a.consent_basis !== undefined ? { consent_basis: a.consent_basis } : {}),
});

export const syncAudiences = defineTask({
  mutating: true,
  description: 'Creates, updates or deletes the buyer\'s first-party audiences on an account (hashed identifiers, matched on arrival); without audiences, lists them.',
  input: syncInput,
  async run(input, ctx) {
    const owner = ctx.principal.org;
    return withIdempotency(ctx.ports.store, owner, 'sync_audiences', input as Record<string, unknown>, async (attempt) => {
      const account = await resolveAccount(ctx, input.account);
      const accountId = account.account_id;
      const sandbox = account.sandbox ? { sandbox: true } : {};
      const existing = await audienceQueries.list(ctx.ports.readModels, owner, accountId);
      if (!input.audiences) {
        return { audiences: existing.map((a) => resultOf(a.audience_id, a.seller_id, a.terms, a.summary, a.synced_at, 'unchanged', 0)), ...sandbox };
      }
      const now = ctx.ports.clock().toISOString();
      const cmdCtx = { now, principal: ctx.principal.keyId, correlationId: ctx.requestId, idempotency: attempt };
      const out: Record<string, unknown>[] = [];
      const deleteOne = async (audienceId: string) => {
        const key = { account_id: accountId, owner, audience_id: audienceId };
        const { events } = await handleCommand(ctx.ports.store, audienceStream(accountId, audienceId), audienceDecider, { type: 'DeleteAudience', key, now }, cmdCtx);
        const sellerId = sellerIdOf(accountId, audienceId);
        out.push(events.length
          ? { audience_id: audienceId, seller_id: sellerId, action: 'deleted' }
          : { audience_id: audienceId, action: 'failed', errors: [{ code: 'REFERENCE_NOT_FOUND', message: `no audience ${audienceId} on this account` }] });
      };
      for (const a of input.audiences) {
        if (a.delete) {
          await deleteOne(a.audience_id);
          continue;
        }
        const key = { account_id: accountId, owner, audience_id: a.audience_id };
        const add = (a.add ?? []).map((m) => matchMember(accountId, a.audience_id, m));
        const remove = (a.remove ?? []).map((m) => memberFingerprint(accountId, a.audience_id, m.external_id));
        const stream = audienceStream(accountId, a.audience_id);
        const { state, events } = await handleCommand(ctx.ports.store, stream, audienceDecider, { type: 'SyncAudience', key, terms: termsOf(a), add, remove, now }, cmdCtx);
        const synced = events.find((e) => e.type === 'AudienceSynced');
        const action = !synced ? 'unchanged' : synced.data.created ? 'created' : 'updated';
        const s = state as AudienceState;
        out.push(resultOf(a.audience_id, sellerIdOf(accountId, a.audience_id), s.terms, s.summary!, s.syncedAt!, action, add.length));
      }
      if (input.delete_missing) {
        const named = new Set(input.audiences.map((a) => a.audience_id));
        for (const a of existing) if (!named.has(a.audience_id)) await deleteOne(a.audience_id);
      }
      return { audiences: out, ...sandbox };
    });
  },
});
