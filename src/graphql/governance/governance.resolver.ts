import { GraphQLJSONObject } from '../json-object';
import { Arg, Ctx, Mutation, Query, Resolver } from 'type-graphql';
import { resolveEscalation } from '../../application/tasks/governance-tasks';
import { AppError } from '../../shared/errors';
import type { GraphQLContext } from '../context';
import { runTask } from '../tasks';

/**
 * Campaign governance over GraphQL, for the buyer's UI: its governance agent's plans, checks,
 * outcomes and audit trail, the agents it registers with this seller, and a reviewer's decision
 * on an escalation. Payloads keep AdCP's JSON shape, as the other task fields do.
 */
@Resolver()
export class GovernanceResolver {
  @Mutation(() => GraphQLJSONObject, { description: 'sync_governance: {accounts: [{account, governance_agents: [{url, authentication {schemes, credentials}, categories?}]}]} → per account: synced (credentials never echoed) or failed. Buyer key required.' })
  async syncGovernance(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'sync_governance', request);
  }

  @Mutation(() => GraphQLJSONObject, { description: 'sync_plans: {plans: [{plan_id, brand, objectives, budget {total, currency?}, flight {start, end}, countries?, custom_policies?}]} → each plan with its version. Buyer key required.' })
  async syncPlans(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'sync_plans', request);
  }

  @Mutation(() => GraphQLJSONObject, { description: 'check_governance: {plan_id, caller, tool + payload | planned_delivery | phase delivery + delivery_metrics, governance_context?} → approved, conditions or denied, with findings. Recorded in the plan’s audit trail. Buyer key required.' })
  async checkGovernance(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'check_governance', request);
  }

  @Mutation(() => GraphQLJSONObject, { description: 'report_plan_outcome: {plan_id, outcome completed|failed|delivery, governance_context, seller_response?} → accepted or findings, with the plan’s budget position. Buyer key required.' })
  async reportPlanOutcome(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'report_plan_outcome', request);
  }

  @Query(() => GraphQLJSONObject, { description: 'get_plan_audit_logs: {plan_ids, governance_contexts?, purchase_types?, include_entries?} → each plan’s budget, decisions, escalations and governed actions. Buyer key required.' })
  async planAuditLogs(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'get_plan_audit_logs', request);
  }

  @Mutation(() => GraphQLJSONObject, {
    description:
      'A reviewer’s decision on an escalated (denied) check of one of the caller’s plans: approve (optionally on conditions: [{field, required_value?, reason}]) or deny. Later checks of the same action follow an approval, up to the amount the reviewer saw. Buyer key required.',
  })
  async resolveGovernanceEscalation(
    @Ctx() ctx: GraphQLContext,
    @Arg('planId', () => String) planId: string,
    @Arg('checkId', () => String) checkId: string,
    @Arg('approve', () => Boolean) approve: boolean,
    // A nullable argument may come as an explicit null, not only left out.
    @Arg('conditions', () => [GraphQLJSONObject], { nullable: true }) conditions?: Record<string, unknown>[] | null,
    @Arg('note', () => String, { nullable: true }) note?: string | null,
  ) {
    if (!ctx.principal || ctx.principal.role !== 'buyer') throw new AppError('UNAUTHENTICATED', 'a Bearer API key with role buyer is required');
    if (planId.length > 255 || checkId.length > 255) throw new AppError('VALIDATION_ERROR', 'planId and checkId are at most 255 characters', planId.length > 255 ? 'planId' : 'checkId');
    if (note != null && note.length > 2000) throw new AppError('VALIDATION_ERROR', 'note is at most 2000 characters', 'note');
    const parsed = (conditions ?? []).map((c, i) => {
      if (typeof c.field !== 'string' || !c.field || c.field.length > 255 || typeof c.reason !== 'string' || !c.reason || c.reason.length > 2000) {
        throw new AppError('VALIDATION_ERROR', `conditions[${i}] needs a field and a reason (strings)`, `conditions[${i}]`);
      }
      return { field: c.field, reason: c.reason, ...(c.required_value !== undefined ? { required_value: c.required_value } : {}) };
    });
    if (parsed.length > 50) throw new AppError('VALIDATION_ERROR', 'at most 50 conditions', 'conditions');
    return resolveEscalation({ ports: ctx.app.ports, principal: ctx.principal, requestId: ctx.requestId, origin: ctx.origin }, { plan_id: planId, check_id: checkId, approve, conditions: parsed, ...(note ? { note } : {}) });
  }
}
