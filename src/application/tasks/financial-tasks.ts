import { z } from 'zod';
import { ownedBuy } from '../buy-ids';
import { accountQueries } from '../../../projections/accounts';
import { deliveryQueries } from '../../../projections/delivery';
import { mediaBuyQueries } from '../../../projections/media-buys';
import { AppError } from '../../shared/errors';
import { newEventId, publicId } from '../../shared/ids';
import { resolveAccount } from '../accounts';
import { handleCommand } from '../command-handler';
import { withIdempotency } from '../idempotency';
import { idempotencyKeyInput } from '../validation';
import { defineTask } from './context';
import type { Decider } from '../../domain/decider';

const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date (YYYY-MM-DD)').refine((s) => !Number.isNaN(Date.parse(s)), { message: 'must be a real date' });

const financialsInput = z
  .object({
    account: z.unknown(),
    period: z.object({ start: day, end: day }).passthrough().refine((p) => p.start <= p.end, { message: 'start must not be after end', path: ['start'] }).optional(),
  })
  .passthrough()
  .superRefine((r, ctx) => {
    if (r.account === undefined) ctx.addIssue({ code: 'custom', path: ['account'], message: 'is required' });
  });

const nextDay = (d: string) => new Date(Date.parse(`${d}T00:00:00Z`) + 86_400_000).toISOString();

/**
 * get_account_financials: what an account has spent in a period (the ad server's recorded
 * delivery of its buys, in UTC days), with its payment terms. This seller bills in arrears on the
 * account's terms and extends no credit line, so there is no balance or credit to report.
 */
export const getAccountFinancials = defineTask({
  description: 'Spend of one of the caller\'s accounts over a period (default: this month to date), its buys and payment terms.',
  input: financialsInput,
  async run(input, ctx) {
    const owner = ctx.principal.org;
    const account = await resolveAccount(ctx, input.account);
    const today = ctx.ports.clock().toISOString().slice(0, 10);
    const period = input.period ?? { start: `${today.slice(0, 8)}01`, end: today };
    const buys = [];
    for (let after: string | undefined; ; ) {
      const page = await mediaBuyQueries.list(ctx.ports.readModels, owner, { limit: 500, ...(after ? { after } : {}) });
      buys.push(...page.filter((b) => b.terms.account_id === account.account_id));
      if (page.length < 500) break;
      after = page[page.length - 1]!.media_buy_id;
    }
    const currency = buys[0]?.terms.currency ?? 'USD';
    const billed = buys.filter((b) => b.terms.currency === currency).map((b) => b.media_buy_id);
    const cents = await deliveryQueries.spendCents(ctx.ports.readModels, owner, billed, `${period.start}T00:00:00.000Z`, nextDay(period.end));
    const terms = (await accountQueries.byId(ctx.ports.readModels, owner, account.account_id))?.terms;
    const paymentTerms = terms?.payment_terms && ['net_15', 'net_30', 'net_45', 'net_60', 'net_90', 'prepay'].includes(terms.payment_terms) ? { payment_terms: terms.payment_terms } : {};
    return {
      account: { account_id: publicId(account.account_id) },
      currency,
      period: { start: period.start, end: period.end },
      timezone: 'UTC',
      spend: { total_spend: cents / 100, media_buy_count: billed.length },
      payment_status: account.status === 'suspended' ? 'suspended' : account.status === 'payment_required' ? 'past_due' : 'current',
      ...paymentTerms,
      ...(account.sandbox ? { sandbox: true } : {}),
    };
  },
});

const feedbackInput = z
  .object({
    media_buy_id: z.string().min(1),
    measurement_period: z.object({ start: z.string().datetime({ offset: true }), end: z.string().datetime({ offset: true }) }).refine((p) => Date.parse(p.start) <= Date.parse(p.end), { message: 'start must not be after end', path: ['start'] }),
    performance_index: z.number().min(0).max(1000),
    package_id: z.string().min(1).optional(),
    creative_id: z.string().min(1).optional(),
    metric_type: z.enum(['overall_performance', 'conversion_rate', 'brand_lift', 'click_through_rate', 'completion_rate', 'viewability', 'brand_safety', 'cost_efficiency']).default('overall_performance'),
    feedback_source: z.enum(['buyer_attribution', 'third_party_measurement', 'platform_analytics', 'verification_partner']).default('buyer_attribution'),
    idempotency_key: idempotencyKeyInput,
  })
  .passthrough();

export type FeedbackEvent = {
  readonly type: 'PerformanceFeedbackProvided';
  readonly data: { readonly feedback_id: string; readonly media_buy_id: string; readonly owner: string; readonly package_id?: string; readonly creative_id?: string; readonly metric_type: string; readonly feedback_source: string; readonly performance_index: number; readonly measurement_period: { start: string; end: string }; readonly at: string };
};

/** A buy's feedback is an append-only log: each report is recorded as given. */
const feedbackLog: Decider<FeedbackEvent, FeedbackEvent, null> = { initialState: () => null, decide: (e) => [e], evolve: () => null };

/**
 * provide_performance_feedback: the buyer's measured performance of a buy (1.0 = as expected),
 * recorded on the buy's feedback stream. The simulated ad server does not optimise on it.
 */
export const providePerformanceFeedback = defineTask({
  mutating: true,
  description: 'Records the buyer\'s measured performance of one of its media buys (a performance index; 1.0 = as expected), for a package or creative or the whole buy.',
  input: feedbackInput,
  async run(input, ctx) {
    const owner = ctx.principal.org;
    return withIdempotency(ctx.ports.store, owner, 'provide_performance_feedback', input as Record<string, unknown>, async (attempt) => {
      const buy = await ownedBuy(ctx, input.media_buy_id);
      if (!buy) throw new AppError('MEDIA_BUY_NOT_FOUND', `no media buy ${input.media_buy_id}`, 'media_buy_id');
      if (input.package_id !== undefined && !buy.terms.packages.some((p) => p.package_id === input.package_id)) {
        throw new AppError('NOT_FOUND', `media buy ${input.media_buy_id} has no package ${input.package_id}`, 'package_id', { resource: 'package' });
      }
      const now = ctx.ports.clock().toISOString();
      const event: FeedbackEvent = {
        type: 'PerformanceFeedbackProvided',
        data: {
          feedback_id: newEventId(),
          media_buy_id: buy.media_buy_id,
          owner,
          ...(input.package_id ? { package_id: input.package_id } : {}),
          ...(input.creative_id ? { creative_id: input.creative_id } : {}),
          metric_type: input.metric_type,
          feedback_source: input.feedback_source,
          performance_index: input.performance_index,
          measurement_period: { start: new Date(input.measurement_period.start).toISOString(), end: new Date(input.measurement_period.end).toISOString() },
          at: now,
        },
      };
      await handleCommand(ctx.ports.store, `feedback-${buy.media_buy_id}`, feedbackLog, event, { now, principal: ctx.principal.keyId, correlationId: ctx.requestId, idempotency: attempt });
      return { success: true, ...(buy.terms.sandbox ? { sandbox: true } : {}) };
    });
  },
});
