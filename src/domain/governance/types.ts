// The types evaluate.ts and plan.ts share (a plan's terms; a check's decision), here so that
// neither imports the other.

/**
 * A buyer's campaign governance plan (AdCP `sync_plans`), held by this gateway acting as the
 * buyer's governance agent: the budget and flight a campaign's agents may commit within, where,
 * and the bespoke policies every commitment must honour. Each check against it, and each outcome
 * the buyer reports, is an event on the plan's stream: that log is the plan's audit trail.
 */
export interface PlanTerms {
  readonly plan_id: string;
  readonly brand: { readonly domain: string; readonly brand_id?: string };
  readonly objectives: string;
  readonly budget: {
    readonly total: number;
    readonly currency?: string;
    readonly reallocation_threshold?: number;
    readonly reallocation_unlimited?: boolean;
    readonly per_seller_max_pct?: number;
  };
  readonly flight: { readonly start: string; readonly end: string };
  readonly countries?: readonly string[];
  readonly channels?: readonly string[];
  readonly custom_policies?: readonly { readonly policy_id: string; readonly enforcement: 'must' | 'should' | 'may'; readonly policy: string }[];
  readonly human_review_required?: boolean;
}

export interface Finding {
  category_id: string;
  policy_id?: string;
  severity: 'info' | 'warning' | 'critical';
  explanation: string;
  details?: Record<string, unknown>;
}

export interface Condition {
  field: string;
  required_value?: unknown;
  reason: string;
}

export interface Decision {
  status: 'approved' | 'denied' | 'conditions';
  explanation: string;
  findings: Finding[];
  conditions: Condition[];
  categories_evaluated: string[];
  policies_evaluated: string[];
}
