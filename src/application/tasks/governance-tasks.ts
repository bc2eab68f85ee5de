import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { evaluate, type ActionUnderCheck } from '../../domain/governance/evaluate';
import { committedOf, humanApprovalOf, planDecider, planKeyFor, planStream, type CheckRecord, type PlanEvent, type PlanState } from '../../domain/governance/plan';
import type { PlanTerms } from '../../domain/governance/types';
import { newEventId } from '../../shared/ids';
import { AppError } from '../../shared/errors';
import { isObject } from '../../shared/objects';
import { handleCommand, loadState } from '../command-handler';
import { withIdempotency } from '../idempotency';
import { idempotencyKeyInput } from '../validation';
import { defineTask, type TaskContext } from './context';
import { untilProjected } from '../projected';

/**
 * This gateway as the buyer's campaign governance agent (AdCP 3.0 governance protocol): buyers
 * sync their plans, and their agents and the sellers they buy from check every commitment against
 * them (`check_governance`), report what was bought (`report_plan_outcome`) and read the trail
 * (`get_plan_audit_logs`). Plans belong to the buyer that synced them. How a check is judged is
 * `domain/governance/evaluate.ts`.
 */

const money = z.number().nonnegative().finite();
const isoDate = z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 date-time');
const planInput = z
  .object({
    plan_id: z.string().min(1).max(255),
    brand: z.object({ domain: z.string().min(1).max(253), brand_id: z.string().min(1).max(255).optional() }).passthrough(),
    objectives: z.string().min(1).max(10_000),
    budget: z
      .object({
        total: money,
        currency: z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code').optional(),
        reallocation_threshold: money.optional(),
        reallocation_unlimited: z.boolean().optional(),
        per_seller_max_pct: z.number().min(0).max(100).optional(),
      })
      .passthrough(),
    flight: z.object({ start: isoDate, end: isoDate }).refine((f) => Date.parse(f.end) > Date.parse(f.start), { message: 'end must be after start', path: ['end'] }),
    countries: z.array(z.string().regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 code')).max(250).optional(),
    channels: z.array(z.string().min(1).max(64)).max(50).optional(),
    custom_policies: z
      .array(z.object({ policy_id: z.string().min(1).max(255), enforcement: z.enum(['must', 'should', 'may']), policy: z.string().min(1).max(10_000) }).passthrough())
      .max(100)
      .optional(),
    human_review_required: z.boolean().optional(),
  })
  .passthrough();

const syncPlansInput = z.object({ plans: z.array(planInput).min(1).max(50), idempotency_key: idempotencyKeyInput }).passthrough();

/** The plan as kept: what evaluation reads, without the caller's extra fields. */
function termsOf(p: z.infer<typeof planInput>): PlanTerms {
  return {
    plan_id: p.plan_id,
    brand: { domain: p.brand.domain.toLowerCase(), ...(p.brand.brand_id ? { brand_id: p.brand.brand_id } : {}) },
    objectives: p.objectives,
    budget: {
      total: p.budget.total,
      ...(p.budget.currency ? { currency: p.budget.currency } : {}),
      ...(p.budget.reallocation_threshold !== undefined ? { reallocation_threshold: p.budget.reallocation_threshold } : {}),
      ...(p.budget.reallocation_unlimited !== undefined ? { reallocation_unlimited: p.budget.reallocation_unlimited } : {}),
      ...(p.budget.per_seller_max_pct !== undefined ? { per_seller_max_pct: p.budget.per_seller_max_pct } : {}),
    },
    flight: { start: new Date(p.flight.start).toISOString(), end: new Date(p.flight.end).toISOString() },
    ...(p.countries ? { countries: p.countries } : {}),
    ...(p.channels ? { channels: p.channels } : {}),
    ...(p.custom_policies ? { custom_policies: p.custom_policies.map((c) => ({ policy_id: c.policy_id, enforcement: c.enforcement, policy: c.policy })) } : {}),
    ...(p.human_review_required !== undefined ? { human_review_required: p.human_review_required } : {}),
  };
}

const cmdCtxOf = (ctx: TaskContext, now: string, attempt?: string) => ({ now, principal: ctx.principal.keyId, correlationId: ctx.requestId, ...(attempt ? { idempotency: attempt } : {}) });

export const syncPlans = defineTask({
  mutating: true,
  description: 'Governance agent: registers or replaces the caller\'s campaign plans (budget, flight, countries, policies); each answers with its version.',
  input: syncPlansInput,
  async run(input, ctx) {
    const owner = ctx.principal.org;
    return withIdempotency(ctx.ports.store, owner, 'sync_plans', input as Record<string, unknown>, async (attempt) => {
      const now = ctx.ports.clock().toISOString();
      const plans = [];
      for (const p of input.plans) {
        const key = { plan_key: planKeyFor(owner, p.plan_id), owner };
        const terms = termsOf(p);
        const { state } = await handleCommand(ctx.ports.store, planStream(key.plan_key), planDecider, { type: 'SyncPlan', key, terms, now }, cmdCtxOf(ctx, now, attempt));
        plans.push({
          plan_id: p.plan_id,
          status: 'active',
          version: state.version,
          categories: [...new Set(['budget_authority', 'strategic_alignment', ...(terms.custom_policies?.length ? ['brand_policy'] : [])])].map((category_id) => ({ category_id, status: 'active' })),
          ...(terms.custom_policies?.length ? { resolved_policies: terms.custom_policies.map((c) => ({ policy_id: c.policy_id, source: 'explicit', enforcement: c.enforcement })) } : {}),
        });
      }
      return { plans };
    });
  },
});

const checkInput = z
  .object({
    plan_id: z.string().min(1).max(255),
    caller: z.string().url('must be the calling agent\'s URL').max(2048),
    purchase_type: z.enum(['media_buy', 'rights_license', 'signal_activation', 'creative_services']).optional(),
    tool: z.string().min(1).max(64).optional(),
    payload: z.record(z.string(), z.unknown()).optional(),
    governance_context: z.string().min(1).max(4096).regex(/^[\x20-\x7E]+$/, 'must be printable ASCII').optional(),
    phase: z.enum(['purchase', 'modification', 'delivery']).optional(),
    planned_delivery: z.record(z.string(), z.unknown()).optional(),
    delivery_metrics: z.record(z.string(), z.unknown()).optional(),
  })
  .passthrough()
  .superRefine((r, c) => {
    if ((r.phase ?? 'purchase') === 'delivery' && !r.delivery_metrics) c.addIssue({ code: 'custom', path: ['delivery_metrics'], message: 'is required for the delivery phase' });
  });

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** A budget as AdCP writes it: a number, or `{amount, currency}`. */
function amountOf(v: unknown): { amount?: number; currency?: string } {
  if (num(v) !== undefined) return { amount: v as number };
  if (isObject(v)) return { amount: num(v.amount), ...(typeof v.currency === 'string' ? { currency: v.currency } : {}) };
  return {};
}

function dateOf(v: unknown): string | undefined {
  if (typeof v === 'string' && !Number.isNaN(Date.parse(v))) return new Date(v).toISOString();
  if (isObject(v) && typeof v.datetime === 'string') return dateOf(v.datetime);
  return undefined;
}

/** What the checked action would do: from the seller's planned delivery, else the intent payload. */
export function actionOf(input: z.infer<typeof checkInput>): ActionUnderCheck {
  const phase = input.phase ?? 'purchase';
  if (phase === 'delivery') {
    const m = input.delivery_metrics ?? {};
    const period = isObject(m.reporting_period) && typeof m.reporting_period.start === 'string' && typeof m.reporting_period.end === 'string' ? { start: m.reporting_period.start, end: m.reporting_period.end } : undefined;
    return {
      phase,
      delivery: {
        cumulative_spend: num(m.cumulative_spend),
        spend: num(m.spend),
        ...(typeof m.pacing === 'string' ? { pacing: m.pacing } : {}),
        ...(period ? { period } : {}),
      },
    };
  }
  const pd = input.planned_delivery;
  if (pd) {
    const { amount, currency } = amountOf(pd.total_budget);
    const geo = isObject(pd.geo) ? pd.geo : {};
    return {
      phase,
      amount,
      currency: typeof pd.currency === 'string' ? pd.currency : currency,
      start: dateOf(pd.start_time),
      end: dateOf(pd.end_time),
      ...(Array.isArray(geo.countries) ? { countries: geo.countries.filter((c): c is string => typeof c === 'string') } : {}),
    };
  }
  const p = input.payload ?? {};
  const total = amountOf(p.total_budget);
  const packages = Array.isArray(p.packages) ? p.packages.filter(isObject) : [];
  const summed = packages.length ? Math.round(packages.reduce((s, k) => s + (amountOf(k.budget).amount ?? 0), 0) * 100) / 100 : undefined;
  return { phase, amount: total.amount ?? summed, currency: total.currency, start: dateOf(p.start_time), end: dateOf(p.end_time) };
}

async function planOf(ctx: TaskContext, planId: string): Promise<{ key: { plan_key: string; owner: string }; state: PlanState }> {
  const key = { plan_key: planKeyFor(ctx.principal.org, planId), owner: ctx.principal.org };
  const { state } = await loadState(ctx.ports.store, planStream(key.plan_key), planDecider);
  if (!state.terms) throw new AppError('PLAN_NOT_FOUND', `no plan ${planId} of yours; call sync_plans first`, 'plan_id');
  return { key, state };
}

/** A governance context this agent issues: opaque, unguessable, and never reused across actions. */
const newGovernanceContext = () => `gctx_${randomBytes(18).toString('base64url')}`;

const DAY_MS = 86_400_000;

function utilizationPct(committed: number, total: number): number | undefined {
  const pct = Math.round((committed / total) * 10_000) / 100;
  return total > 0 && Number.isFinite(pct) ? pct : undefined;
}

export const checkGovernance = defineTask({
  // It records the check (the audit trail), so it answers once the record is readable.
  mutating: true,
  description: 'Governance agent: judges a proposed (tool + payload) or committed (planned_delivery) action, or a delivery report, against a plan: approved, conditions, or denied with findings.',
  input: checkInput,
  async run(input, ctx) {
    const { key, state } = await planOf(ctx, input.plan_id);
    const plan = state.terms!;
    // A context this plan issued continues its action; any other starts a new one.
    const governanceContext = input.governance_context && state.actions.has(input.governance_context) ? input.governance_context : newGovernanceContext();
    const action = actionOf(input);
    let decision = evaluate(plan, committedOf(state, governanceContext), action);
    // A human who approved this action's escalation has the last word, up to the amount they saw.
    const human = decision.status === 'denied' ? humanApprovalOf(state, governanceContext) : undefined;
    const humanStands = human && (human.up_to === undefined || action.amount === undefined || action.amount <= human.up_to);
    if (human && humanStands) {
      const conditions = [...(human.conditions ?? []), ...decision.conditions.filter((c) => c.field.startsWith('policies.'))];
      decision = {
        ...decision,
        status: conditions.length ? 'conditions' : 'approved',
        conditions,
        explanation: `Approved by ${human.reviewer} after escalation (check ${human.check_id})${human.note ? `: ${human.note}` : ''}. The rules alone would deny it: ${decision.explanation}`,
      };
    }
    const now = ctx.ports.clock();
    // A seller's check (what it will deliver, or what it delivered) is an execution check.
    const execution = input.planned_delivery !== undefined || action.phase === 'delivery';
    const check: CheckRecord = {
      check_id: `chk_${newEventId()}`,
      caller: input.caller,
      ...(input.tool ? { tool: input.tool } : {}),
      check_type: execution ? 'execution' : 'intent',
      phase: action.phase,
      purchase_type: input.purchase_type ?? 'media_buy',
      decision,
      governance_context: governanceContext,
      // Only a seller's committed (execution) check holds budget; an intent check only asks.
      commits: execution && action.phase !== 'delivery' && decision.status !== 'denied' ? (action.amount ?? 0) : 0,
      ...(action.amount !== undefined ? { amount: action.amount } : {}),
      ...(human && humanStands ? { human_review: { check_id: human.check_id, reviewer: human.reviewer } } : {}),
      at: now.toISOString(),
    };
    await handleCommand(ctx.ports.store, planStream(key.plan_key), planDecider, { type: 'RecordCheck', key, check }, cmdCtxOf(ctx, check.at));
    const granted = decision.status !== 'denied';
    return {
      check_id: check.check_id,
      status: decision.status,
      plan_id: input.plan_id,
      explanation: decision.explanation,
      ...(decision.findings.length ? { findings: decision.findings } : {}),
      ...(decision.conditions.length ? { conditions: decision.conditions } : {}),
      ...(granted ? { expires_at: new Date(now.getTime() + DAY_MS).toISOString() } : {}),
      ...(granted && (execution || action.phase === 'delivery') ? { next_check: new Date(now.getTime() + 7 * DAY_MS).toISOString() } : {}),
      categories_evaluated: decision.categories_evaluated,
      policies_evaluated: decision.policies_evaluated,
      mode: 'enforce',
      governance_context: governanceContext,
    };
  },
});

const outcomeInput = z
  .object({
    plan_id: z.string().min(1).max(255),
    check_id: z.string().min(1).max(255).optional(),
    idempotency_key: idempotencyKeyInput,
    purchase_type: z.enum(['media_buy', 'rights_license', 'signal_activation', 'creative_services']).optional(),
    outcome: z.enum(['completed', 'failed', 'delivery']),
    seller_response: z.object({ seller_reference: z.string().max(255).optional(), committed_budget: money.optional() }).passthrough().optional(),
    delivery: z.record(z.string(), z.unknown()).optional(),
    error: z.record(z.string(), z.unknown()).optional(),
    governance_context: z.string().min(1).max(4096).regex(/^[\x20-\x7E]+$/, 'must be printable ASCII'),
  })
  .passthrough();

export const reportPlanOutcome = defineTask({
  mutating: true,
  description: 'Governance agent: records what an action actually committed (or that it failed) against a plan\'s budget.',
  input: outcomeInput,
  async run(input, ctx) {
    return withIdempotency(ctx.ports.store, ctx.principal.org, 'report_plan_outcome', input as Record<string, unknown>, async (attempt) => {
      const { key, state } = await planOf(ctx, input.plan_id);
      const plan = state.terms!;
      const now = ctx.ports.clock().toISOString();
      const committed = input.outcome === 'completed' ? input.seller_response?.committed_budget : undefined;
      const outcome = {
        outcome_id: `out_${newEventId()}`,
        ...(input.check_id ? { check_id: input.check_id } : {}),
        outcome: input.outcome,
        governance_context: input.governance_context,
        purchase_type: input.purchase_type ?? 'media_buy',
        ...(committed !== undefined ? { committed_budget: committed } : {}),
        ...(input.seller_response?.seller_reference ? { seller_reference: input.seller_response.seller_reference } : {}),
        at: now,
      };
      const { state: after } = await handleCommand(ctx.ports.store, planStream(key.plan_key), planDecider, { type: 'ReportOutcome', key, outcome }, cmdCtxOf(ctx, now, attempt));
      const total = committedOf(after);
      const over = total > plan.budget.total;
      return {
        outcome_id: outcome.outcome_id,
        status: over ? 'findings' : 'accepted',
        ...(committed !== undefined ? { committed_budget: committed } : {}),
        ...(over
          ? { findings: [{ category_id: 'budget_authority', severity: 'critical', explanation: `Plan ${plan.plan_id} now holds ${total} ${plan.budget.currency ?? 'USD'} of commitments against a ${plan.budget.total} budget.` }] }
          : {}),
        plan_summary: { total_committed: total, budget_remaining: Math.round((plan.budget.total - total) * 100) / 100 },
      };
    });
  },
});

const auditInput = z
  .object({
    plan_ids: z.array(z.string().min(1).max(255)).min(1).max(50).optional(),
    governance_contexts: z.array(z.string().min(1).max(4096)).max(50).optional(),
    purchase_types: z.array(z.enum(['media_buy', 'rights_license', 'signal_activation', 'creative_services'])).max(4).optional(),
    include_entries: z.boolean().optional(),
  })
  .passthrough()
  .refine((r) => r.plan_ids !== undefined, { message: 'is required (the plans whose trail to read)', path: ['plan_ids'] });

export const getPlanAuditLogs = defineTask({
  description: 'Governance agent: each plan\'s budget position, decisions, escalations and governed actions, with every check and outcome when include_entries is set.',
  input: auditInput,
  async run(input, ctx) {
    const plans = [];
    for (const planId of input.plan_ids!) {
      const key = planKeyFor(ctx.principal.org, planId);
      const events = await ctx.ports.store.readStream(planStream(key));
      if (!events.length) throw new AppError('PLAN_NOT_FOUND', `no plan ${planId} of yours`, 'plan_ids');
      let state = planDecider.initialState();
      const statuses = { approved: 0, denied: 0, conditions: 0, human_reviewed: 0 };
      const reasons = new Map<string, string>();
      const entries: Record<string, unknown>[] = [];
      let findings = 0;
      const wanted = (ctxToken: string, type: string) =>
        (!input.governance_contexts || input.governance_contexts.includes(ctxToken)) && (!input.purchase_types || (input.purchase_types as string[]).includes(type));
      for (const stored of events) {
        const e = stored as unknown as PlanEvent;
        state = planDecider.evolve(state, e);
        if (e.type === 'GovernanceChecked' && wanted(e.data.check.governance_context, e.data.check.purchase_type)) {
          const c = e.data.check;
          statuses[c.decision.status] += 1;
          findings += c.decision.findings.length;
          if (c.decision.status === 'denied') reasons.set(c.check_id, c.decision.explanation);
          if (c.human_review) statuses.human_reviewed += 1;
          entries.push({
            id: c.check_id,
            type: 'check',
            timestamp: c.at,
            plan_id: planId,
            caller: c.caller,
            ...(c.tool ? { tool: c.tool } : {}),
            status: c.decision.status,
            check_type: c.check_type,
            mode: 'enforce',
            explanation: c.decision.explanation,
            policies_evaluated: c.decision.policies_evaluated,
            categories_evaluated: c.decision.categories_evaluated,
            ...(c.decision.findings.length ? { findings: c.decision.findings.map(({ details: _d, ...f }) => f) } : {}),
            governance_context: c.governance_context,
            purchase_type: c.purchase_type,
          });
        } else if (e.type === 'PlanOutcomeReported' && wanted(e.data.outcome.governance_context, e.data.outcome.purchase_type)) {
          const o = e.data.outcome;
          entries.push({
            id: o.outcome_id,
            type: 'outcome',
            timestamp: o.at,
            plan_id: planId,
            outcome: o.outcome,
            ...(o.committed_budget !== undefined ? { committed_budget: o.committed_budget } : {}),
            governance_context: o.governance_context,
            purchase_type: o.purchase_type,
          });
        }
      }
      const plan = state.terms!;
      const committed = committedOf(state);
      const escalations = [...reasons].map(([checkId, reason]) => {
        const r = state.escalations.get(checkId)?.resolution;
        return { check_id: checkId, reason, ...(r ? { resolution: `${r.decision} by ${r.reviewer}${r.note ? `: ${r.note}` : ''}`, resolved_at: r.at } : {}) };
      });
      const checks = statuses.approved + statuses.denied + statuses.conditions;
      plans.push({
        plan_id: planId,
        plan_version: state.version,
        status: 'active',
        budget: {
          authorized: plan.budget.total,
          committed,
          remaining: Math.round((plan.budget.total - committed) * 100) / 100,
          // A share only where one exists (a budget of 0, or one so small the share overflows, has none).
          ...(utilizationPct(committed, plan.budget.total) !== undefined ? { utilization_pct: utilizationPct(committed, plan.budget.total) } : {}),
        },
        summary: {
          checks_performed: checks,
          outcomes_reported: entries.filter((x) => x.type === 'outcome').length,
          statuses,
          findings_count: findings,
          ...(escalations.length ? { escalations } : {}),
        },
        ...(input.include_entries ? { entries } : {}),
        governed_actions: [...state.actions.values()]
          .filter((a) => wanted(a.governance_context, a.purchase_type))
          .map((a) => ({ governance_context: a.governance_context, purchase_type: a.purchase_type, status: a.status, committed: a.committed, check_count: a.check_count, ...(a.seller_reference ? { seller_reference: a.seller_reference } : {}) })),
      });
    }
    return { plans };
  },
});

/**
 * A human's decision on an escalated check (a denial): the plan owner's reviewer approves the
 * action, optionally on conditions, or confirms the denial. Later checks of the same action (its
 * governance_context) follow an approval up to the amount the reviewer saw. GraphQL only: it is a
 * person's act, not an agent's task.
 */
export async function resolveEscalation(
  ctx: TaskContext,
  input: { plan_id: string; check_id: string; approve: boolean; conditions?: { field: string; required_value?: unknown; reason: string }[]; note?: string },
): Promise<Record<string, unknown>> {
  const { key } = await planOf(ctx, input.plan_id);
  const now = ctx.ports.clock().toISOString();
  const { state } = await handleCommand(
    ctx.ports.store,
    planStream(key.plan_key),
    planDecider,
    { type: 'ResolveEscalation', key, checkId: input.check_id, decision: input.approve ? 'approved' : 'denied', ...(input.conditions?.length ? { conditions: input.conditions } : {}), reviewer: ctx.principal.keyId, ...(input.note ? { note: input.note } : {}), now },
    cmdCtxOf(ctx, now),
  );
  await untilProjected(ctx.ports);
  const e = state.escalations.get(input.check_id)!;
  return { plan_id: input.plan_id, check_id: input.check_id, governance_context: e.governance_context, decision: e.resolution!.decision, ...(e.resolution!.conditions ? { conditions: e.resolution!.conditions } : {}), resolved_at: e.resolution!.at };
}
