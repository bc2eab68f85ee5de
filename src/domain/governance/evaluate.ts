import type { Condition, Decision, Finding, PlanTerms } from './types';


/**
 * How this governance agent judges a proposed or committed action against a plan. Deterministic
 * and explainable: every finding names the rule and the figures behind it.
 *
 * - Budget: an action may commit what the plan has left (its total less what other actions
 *   hold); more is denied, with the amount that would be approved as a condition.
 * - Flight and geography: dates outside the plan's flight, or countries it does not cover, are
 *   denied, with the plan's values as conditions.
 * - Bespoke policies: natural-language text this agent cannot verify by rule. A `must` policy
 *   becomes a condition the caller must meet (status `conditions`); a `should` policy an
 *   informational finding. Neither applies to delivery reports.
 * - Delivery: reported spend beyond the budget is critical; pacing ahead of or behind the
 *   flight, reports outside the flight, and a line item drifting more than 20 % from an even
 *   spend are warnings, with the next check due in a week.
 *
 * Its types (Decision, Finding, Condition) live in types.ts beside the plan's terms.
 */

/** What the action under check would do, read from an intent payload or a seller's planned delivery. */
export interface ActionUnderCheck {
  phase: 'purchase' | 'modification' | 'delivery';
  amount?: number;
  currency?: string;
  start?: string;
  end?: string;
  countries?: string[];
  delivery?: { cumulative_spend?: number; spend?: number; pacing?: string; period?: { start: string; end: string }; channel_distribution?: Record<string, number> };
}

/** Drift beyond which a delivery report is flagged (the share a line item may stray from plan). */
export const DRIFT_TOLERANCE = 0.2;

const money = (n: number, currency = 'USD') => `${currency} ${n.toLocaleString('en-US', { maximumFractionDigits: 2 })}`;

export function evaluate(plan: PlanTerms, committedElsewhere: number, action: ActionUnderCheck): Decision {
  const findings: Finding[] = [];
  const conditions: Condition[] = [];
  const categories = new Set<string>(['budget_authority']);
  const policies: string[] = [];
  const currency = plan.budget.currency ?? 'USD';
  const remaining = Math.max(0, Math.round((plan.budget.total - committedElsewhere) * 100) / 100);

  if (action.amount !== undefined && action.phase !== 'delivery') {
    if (action.currency && plan.budget.currency && action.currency !== plan.budget.currency) {
      findings.push({ category_id: 'budget_authority', severity: 'critical', explanation: `The action is priced in ${action.currency}; plan ${plan.plan_id} is budgeted in ${plan.budget.currency}.` });
    } else if (action.amount > remaining) {
      findings.push({
        category_id: 'budget_authority',
        severity: 'critical',
        explanation: `${money(action.amount, currency)} exceeds the ${money(remaining, currency)} that plan ${plan.plan_id} has left of its ${money(plan.budget.total, currency)} budget.`,
        details: { requested: action.amount, remaining, authorized: plan.budget.total, committed: committedElsewhere },
      });
      conditions.push({ field: 'total_budget', required_value: remaining, reason: `At most ${money(remaining, currency)} remains under plan ${plan.plan_id}.` });
    }
  }

  categories.add('strategic_alignment');
  const fStart = Date.parse(plan.flight.start);
  const fEnd = Date.parse(plan.flight.end);
  if (action.phase !== 'delivery') {
    if (action.start !== undefined && Date.parse(action.start) < fStart) {
      findings.push({ category_id: 'strategic_alignment', severity: 'critical', explanation: `The action starts ${action.start}, before the plan's flight begins ${plan.flight.start}.` });
      conditions.push({ field: 'start_time', required_value: plan.flight.start, reason: 'Start within the plan\'s flight.' });
    }
    if (action.end !== undefined && Date.parse(action.end) > fEnd) {
      findings.push({ category_id: 'strategic_alignment', severity: 'critical', explanation: `The action ends ${action.end}, after the plan's flight ends ${plan.flight.end}.` });
      conditions.push({ field: 'end_time', required_value: plan.flight.end, reason: 'End within the plan\'s flight.' });
    }
    if (plan.countries?.length && action.countries?.length) {
      const outside = action.countries.filter((c) => !plan.countries!.includes(c.toUpperCase()));
      if (outside.length) {
        categories.add('regulatory_compliance');
        findings.push({ category_id: 'regulatory_compliance', severity: 'critical', explanation: `Plan ${plan.plan_id} covers ${plan.countries.join(', ')}; the action targets ${outside.join(', ')}.` });
        conditions.push({ field: 'targeting_overlay.geo_countries', required_value: action.countries.filter((c) => plan.countries!.includes(c.toUpperCase())), reason: 'Target only the plan\'s countries.' });
      }
    }
    for (const p of plan.custom_policies ?? []) {
      policies.push(p.policy_id);
      categories.add('brand_policy');
      if (p.enforcement === 'must') {
        conditions.push({ field: `policies.${p.policy_id}`, reason: `Required by plan policy ${p.policy_id}: ${p.policy}` });
      } else {
        findings.push({ category_id: 'brand_policy', policy_id: p.policy_id, severity: 'info', explanation: `Plan policy ${p.policy_id} (${p.enforcement}): ${p.policy}` });
      }
    }
  } else if (action.delivery) {
    const d = action.delivery;
    categories.add('delivery_pacing');
    const spent = d.cumulative_spend ?? d.spend;
    if (spent !== undefined && spent > plan.budget.total) {
      findings.push({ category_id: 'budget_authority', severity: 'critical', explanation: `Reported spend ${money(spent, currency)} exceeds plan ${plan.plan_id}'s ${money(plan.budget.total, currency)} budget.` });
    }
    if (d.period && (Date.parse(d.period.end) <= fStart || Date.parse(d.period.start) >= fEnd)) {
      findings.push({ category_id: 'delivery_pacing', severity: 'warning', explanation: `The reporting period ${d.period.start} – ${d.period.end} lies outside the plan's flight (${plan.flight.start} – ${plan.flight.end}).` });
    }
    if (d.pacing === 'ahead' || d.pacing === 'behind') {
      findings.push({ category_id: 'delivery_pacing', severity: 'warning', explanation: `Delivery is reported ${d.pacing} of the planned pace.` });
    }
    if (spent !== undefined && d.period) {
      const elapsed = Math.min(1, Math.max(0, (Date.parse(d.period.end) - fStart) / (fEnd - fStart)));
      const expected = plan.budget.total * elapsed;
      const drift = expected > 0 ? (spent - expected) / expected : spent > 0 ? 1 : 0;
      if (Math.abs(drift) > DRIFT_TOLERANCE) {
        findings.push({
          category_id: 'delivery_pacing',
          severity: 'warning',
          explanation: `Cumulative spend ${money(spent, currency)} is ${Math.round(drift * 100)}% from the ${money(expected, currency)} an even pace through ${d.period.end} implies.`,
          details: { drift: Math.round(drift * 1000) / 1000, expected_spend: Math.round(expected * 100) / 100, tolerance: DRIFT_TOLERANCE },
        });
      }
    }
    for (const p of plan.custom_policies ?? []) policies.push(p.policy_id);
  }

  const critical = findings.filter((f) => f.severity === 'critical');
  const status: Decision['status'] = critical.length ? 'denied' : conditions.length ? 'conditions' : 'approved';
  const explanation =
    status === 'denied'
      ? `Denied under plan ${plan.plan_id}: ${critical.map((f) => f.explanation).join(' ')}`
      : status === 'conditions'
        ? `Approved under plan ${plan.plan_id} on ${conditions.length} condition(s): ${conditions.map((c) => c.reason).join(' ')}`
        : `Approved under plan ${plan.plan_id}${action.phase === 'delivery' ? `: delivery reviewed (${findings.length} finding(s))` : `: within budget (${money(remaining, currency)} left before this action) and flight`}.`;
  return { status, explanation, findings, conditions, categories_evaluated: [...categories], policies_evaluated: policies };
}
