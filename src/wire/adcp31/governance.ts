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
};
