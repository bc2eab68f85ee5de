import { isObject } from '../../shared/objects';

type Obj = Record<string, any>;

/**
 * The governance tasks in 3.1. 3.1's envelope makes `status` the task's status on every answer
 * (the MCP binding sets it, `completed` for these synchronous tasks), so the fields 3.0 called
 * `status` are renamed: a check's decision is its `verdict`, an outcome's acceptance its
 * `outcome_state` (3.1.19: governance/check-governance-response, report-plan-outcome-response,
 * get-plan-audit-logs-response). The values are 3.0's.
 */

/** check_governance: `status` (approved | conditions | denied) becomes `verdict`. */
export function checkGovernance31(answer: Obj): Obj {
  const { status, ...rest } = answer;
  return { ...rest, verdict: status };
}

/** report_plan_outcome: `status` (accepted | findings) becomes `outcome_state`. */
export function reportPlanOutcome31(answer: Obj): Obj {
  const { status, ...rest } = answer;
  return { ...rest, outcome_state: status };
}

/** get_plan_audit_logs: each check entry's `status` becomes its `verdict` (a plan's own `status`, its lifecycle, stays). */
export function planAuditLogs31(answer: Obj): Obj {
  if (!Array.isArray(answer.plans)) return answer;
  return {
    ...answer,
    plans: (answer.plans as Obj[]).map((plan) =>
      Array.isArray(plan.entries)
        ? {
            ...plan,
            entries: (plan.entries as Obj[]).map((entry) => {
              if (entry.status === undefined) return entry;
              const { status, ...rest } = entry;
              return { ...rest, verdict: status };
            }),
          }
        : plan,
    ),
  };
}

/** The governance tasks' 3.1 answers from their 3.0 ones, by task. */
export const governance31: Readonly<Record<string, (answer: Obj) => Obj>> = {
  check_governance: checkGovernance31,
  report_plan_outcome: reportPlanOutcome31,
  get_plan_audit_logs: planAuditLogs31,
  sync_governance: syncGovernance31,
};

/**
 * `sync_governance` in AdCP 3.1 (account/sync-governance-response.json): each account's one
 * governance agent as `{url}` (3.1 dropped 3.0's `categories`; its request rules refuse them).
 */
export function syncGovernance31(r: Obj): Obj {
  if (!Array.isArray(r.accounts)) return r;
  return {
    ...r,
    accounts: r.accounts.map((a: Obj) => (Array.isArray(a.governance_agents) ? { ...a, governance_agents: a.governance_agents.map((g: unknown) => (isObject(g) ? { url: g.url } : g)) } : a)),
  };
}

/**
 * `get_adcp_capabilities` in AdCP 3.1: `media_buy.governance_aware` declares what this seller
 * does with the agent sync_governance registers (consults it with check_governance before
 * committing a buy, and answers GOVERNANCE_DENIED when it denies: application/governance), so
 * 3.1's runners grade the governance-denial storyboards; 3.0's capabilities have no such field.
 */
export function governanceAware31(declared: Obj): Obj {
  return isObject(declared.media_buy) ? { ...declared, media_buy: { ...declared.media_buy, governance_aware: true } } : declared;
}
