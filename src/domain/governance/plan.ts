import { createHash } from 'node:crypto';
import { AppError } from '../../shared/errors';
import { assertNever, type Decider } from '../decider';
import type { Decision, PlanTerms } from './types';


/** One governed action (a buy, from its first check to its outcome): what it has committed. */
export interface GovernedAction {
  readonly governance_context: string;
  readonly purchase_type: string;
  readonly status: 'active' | 'completed';
  readonly committed: number;
  readonly check_count: number;
  readonly seller_reference?: string;
}

export interface CheckRecord {
  readonly check_id: string;
  readonly caller: string;
  readonly tool?: string;
  readonly check_type: 'intent' | 'execution';
  readonly phase: 'purchase' | 'modification' | 'delivery';
  readonly purchase_type: string;
  readonly decision: Decision;
  readonly governance_context: string;
  /** What an approved execution check commits against the plan's budget (0 for intent and delivery checks). */
  readonly commits: number;
  /** The amount the checked action asked for, when it named one. */
  readonly amount?: number;
  /** The human decision this check followed, when an escalation of the same action was resolved. */
  readonly human_review?: { readonly check_id: string; readonly reviewer: string };
  readonly at: string;
}

/** A human's decision on an escalated (denied) check: it stands for that action, up to the amount checked. */
export interface EscalationResolution {
  readonly check_id: string;
  readonly governance_context: string;
  readonly decision: 'approved' | 'denied';
  readonly conditions?: readonly { readonly field: string; readonly required_value?: unknown; readonly reason: string }[];
  /** The most the reviewer approved: the amount of the escalated check. */
  readonly up_to?: number;
  readonly reviewer: string;
  readonly note?: string;
  readonly at: string;
}

export interface OutcomeRecord {
  readonly outcome_id: string;
  readonly check_id?: string;
  readonly outcome: 'completed' | 'failed' | 'delivery';
  readonly governance_context: string;
  readonly purchase_type: string;
  readonly committed_budget?: number;
  readonly seller_reference?: string;
  readonly at: string;
}

interface Key {
  /** Stored id: the buyer's plan_id scoped to the buyer (two buyers may use the same name). */
  readonly plan_key: string;
  readonly owner: string;
}

export type PlanEvent =
  | { readonly type: 'PlanSynced'; readonly data: Key & { readonly terms: PlanTerms; readonly version: number; readonly at: string } }
  | { readonly type: 'GovernanceChecked'; readonly data: Key & { readonly check: CheckRecord } }
  | { readonly type: 'PlanOutcomeReported'; readonly data: Key & { readonly outcome: OutcomeRecord } }
  | { readonly type: 'EscalationResolved'; readonly data: Key & { readonly resolution: EscalationResolution } };

export type PlanCommand =
  | { readonly type: 'SyncPlan'; readonly key: Key; readonly terms: PlanTerms; readonly now: string }
  | { readonly type: 'RecordCheck'; readonly key: Key; readonly check: CheckRecord }
  | { readonly type: 'ReportOutcome'; readonly key: Key; readonly outcome: OutcomeRecord }
  | { readonly type: 'ResolveEscalation'; readonly key: Key; readonly checkId: string; readonly decision: 'approved' | 'denied'; readonly conditions?: EscalationResolution['conditions']; readonly reviewer: string; readonly note?: string; readonly now: string };

export interface PlanState {
  readonly terms?: PlanTerms;
  readonly version: number;
  /** Governed actions by governance_context, in the order they began. */
  readonly actions: ReadonlyMap<string, GovernedAction>;
  readonly checks: number;
  readonly outcomes: number;
  /** Denied checks awaiting a human, by check_id: the action and the amount it asked for. */
  readonly escalations: ReadonlyMap<string, { readonly governance_context: string; readonly amount?: number; readonly resolution?: EscalationResolution }>;
}

export const planKeyFor = (owner: string, planId: string) => `plan_${createHash('sha256').update(`${owner}\u0000${planId}`).digest('base64url').slice(0, 22)}`;
export const planStream = (planKey: string) => `governance-${planKey}`;

/** The latest human approval of an action (by its governance_context), if a reviewer approved one. */
export function humanApprovalOf(state: PlanState, governanceContext: string): EscalationResolution | undefined {
  let found: EscalationResolution | undefined;
  for (const e of state.escalations.values()) if (e.resolution && e.governance_context === governanceContext) found = e.resolution;
  return found?.decision === 'approved' ? found : undefined;
}

/** Budget the plan's active and completed actions hold. */
export function committedOf(state: PlanState, except?: string): number {
  let sum = 0;
  for (const a of state.actions.values()) if (a.governance_context !== except) sum += a.committed;
  return Math.round(sum * 100) / 100;
}

function withAction(state: PlanState, ctx: string, purchaseType: string, change: (a: GovernedAction) => GovernedAction): PlanState {
  const actions = new Map(state.actions);
  const before = actions.get(ctx) ?? { governance_context: ctx, purchase_type: purchaseType, status: 'active' as const, committed: 0, check_count: 0 };
  actions.set(ctx, change(before));
  return { ...state, actions };
}

export const planDecider: Decider<PlanCommand, PlanEvent, PlanState> = {
  initialState: () => ({ version: 0, actions: new Map(), checks: 0, outcomes: 0, escalations: new Map() }),
  decide(command, state) {
    switch (command.type) {
      case 'SyncPlan':
        if (state.terms && JSON.stringify(state.terms) === JSON.stringify(command.terms)) return [];
        return [{ type: 'PlanSynced', data: { ...command.key, terms: command.terms, version: state.version + 1, at: command.now } }];
      case 'RecordCheck':
        if (!state.terms) throw new AppError('PLAN_NOT_FOUND', `no plan ${command.key.plan_key} of yours; call sync_plans first`, 'plan_id');
        return [{ type: 'GovernanceChecked', data: { ...command.key, check: command.check } }];
      case 'ReportOutcome':
        if (!state.terms) throw new AppError('PLAN_NOT_FOUND', 'no plan of yours has this plan_id; call sync_plans first', 'plan_id');
        return [{ type: 'PlanOutcomeReported', data: { ...command.key, outcome: command.outcome } }];
      case 'ResolveEscalation': {
        const escalation = state.escalations.get(command.checkId);
        if (!escalation) throw new AppError('NOT_FOUND', `no escalated check ${command.checkId} on this plan (only denied checks are escalated)`, 'check_id');
        if (escalation.resolution) throw new AppError('INVALID_STATE', `check ${command.checkId} was already ${escalation.resolution.decision} by ${escalation.resolution.reviewer}`, 'check_id');
        const resolution: EscalationResolution = {
          check_id: command.checkId,
          governance_context: escalation.governance_context,
          decision: command.decision,
          ...(command.conditions?.length ? { conditions: command.conditions } : {}),
          ...(escalation.amount !== undefined ? { up_to: escalation.amount } : {}),
          reviewer: command.reviewer,
          ...(command.note ? { note: command.note } : {}),
          at: command.now,
        };
        return [{ type: 'EscalationResolved', data: { ...command.key, resolution } }];
      }
      default:
        return assertNever(command);
    }
  },
  evolve(state, event) {
    switch (event.type) {
      case 'PlanSynced':
        return { ...state, terms: event.data.terms, version: event.data.version };
      case 'GovernanceChecked': {
        const c = event.data.check;
        const next = withAction(state, c.governance_context, c.purchase_type, (a) => ({ ...a, check_count: a.check_count + 1, committed: c.commits > 0 ? c.commits : a.committed }));
        const escalations = c.decision.status === 'denied' ? new Map(state.escalations).set(c.check_id, { governance_context: c.governance_context, ...(c.amount !== undefined ? { amount: c.amount } : {}) }) : state.escalations;
        return { ...next, checks: state.checks + 1, escalations };
      }
      case 'PlanOutcomeReported': {
        const o = event.data.outcome;
        const next = withAction(state, o.governance_context, o.purchase_type, (a) => {
          if (o.outcome === 'failed') return { ...a, committed: 0, status: 'completed' };
          return {
            ...a,
            ...(o.committed_budget !== undefined ? { committed: o.committed_budget } : {}),
            ...(o.seller_reference ? { seller_reference: o.seller_reference } : {}),
          };
        });
        return { ...next, outcomes: state.outcomes + 1 };
      }
      case 'EscalationResolved': {
        const r = event.data.resolution;
        const before = state.escalations.get(r.check_id);
        return before ? { ...state, escalations: new Map(state.escalations).set(r.check_id, { ...before, resolution: r }) } : state;
      }
      default:
        return assertNever(event);
    }
  },
};
