import { GraphQLJSONObject } from '../json-object';
import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import { approveTask, rejectTask, requestInput } from '../../application/approvals';
import { untilProjected } from '../../application/projected';
import { AppError } from '../../shared/errors';
import type { GraphQLContext } from '../context';
import { runTask } from '../tasks';

/** An operator's command context (seller or admin key), else the refusal. */
export function operatorCommand(ctx: GraphQLContext) {
  if (!ctx.principal) throw new AppError('UNAUTHENTICATED', 'a Bearer API key is required');
  if (ctx.principal.role !== 'seller' && ctx.principal.role !== 'admin') throw new AppError('FORBIDDEN', 'seller or admin role required');
  return { now: ctx.app.clock().toISOString(), principal: ctx.principal.keyId, correlationId: ctx.requestId };
}

/** Answers once the read models show the operator's change (read-your-writes). */
export async function settled<T>(ctx: GraphQLContext, value: T): Promise<T> {
  await untilProjected(ctx.app.ports);
  return value;
}

/**
 * Media-buy tasks over GraphQL. Task payloads keep the spec's JSON shape (JSONObject) so REST,
 * GraphQL and MCP return the same document; typed fields follow as the shapes settle.
 */
@Resolver()
export class MediaBuyResolver {
  @Mutation(() => GraphQLJSONObject, { description: 'create_media_buy: the request as in the spec (buyer_ref, brand_manifest, packages, start_time, end_time, …), or a proposal accepted with proposal_id + total_budget in place of packages. Buyer key required.' })
  async createMediaBuy(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'create_media_buy', request);
  }

  @Mutation(() => GraphQLJSONObject, { description: 'update_media_buy: {media_buy_id, updates: {budget_change, end_time, status pause|resume|cancel, targeting, packages, push_notification_config, reporting_webhook}}. Buyer key required.' })
  async updateMediaBuy(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'update_media_buy', request);
  }

  @Query(() => GraphQLJSONObject, { description: 'get_media_buys: the caller’s own buys, with packages and status. Buyer key required.' })
  async mediaBuys(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject, { nullable: true }) request?: Record<string, unknown>) {
    return runTask(ctx, 'get_media_buys', request ?? {});
  }

  @Mutation(() => GraphQLJSONObject, { description: 'sync_creatives: {creatives, assignments?, dry_run?, delete_missing?} → a per-creative action. Buyer key required.' })
  async syncCreatives(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'sync_creatives', request);
  }

  @Mutation(() => GraphQLJSONObject, { description: 'sync_accounts: {accounts: [{brand {domain}, operator, billing?, payment_terms?, sandbox?}], dry_run?} → each account with its action and status. Buyer key required.' })
  async syncAccounts(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'sync_accounts', request);
  }

  @Query(() => GraphQLJSONObject, { description: 'list_accounts: {status?, sandbox?, pagination?} → the caller’s accounts on this seller. Buyer key required.' })
  async accounts(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject, { nullable: true }) request?: Record<string, unknown>) {
    return runTask(ctx, 'list_accounts', request ?? {});
  }

  @Mutation(() => GraphQLJSONObject, {
    description: 'sync_audiences: {account, audiences?: [{audience_id, name?, add?, remove?, delete?}], delete_missing?} → per audience: action, status, match counts. Without audiences, lists the account’s audiences. Buyer key required.',
  })
  async syncAudiences(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'sync_audiences', request);
  }

  @Mutation(() => GraphQLJSONObject, { description: 'sync_catalogs: {account, catalogs?: [{catalog_id, type, name?, items}], catalog_ids?, delete_missing?, dry_run?, validation_mode?} → per catalog: action and item review. Buyer key required.' })
  async syncCatalogs(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'sync_catalogs', request);
  }

  @Mutation(() => GraphQLJSONObject, { description: 'sync_event_sources: {account, event_sources?: [{event_source_id, name?, event_types?, allowed_domains?}], delete_missing?} → each with its setup and health. Buyer key required.' })
  async syncEventSources(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'sync_event_sources', request);
  }

  @Mutation(() => GraphQLJSONObject, { description: 'log_event: {event_source_id, events: [{event_id, event_type, event_time, user_match?, custom_data?}], test_event_code?} → received, processed, match quality. Buyer key required.' })
  async logEvent(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'log_event', request);
  }

  @Query(() => GraphQLJSONObject, { description: 'get_account_financials: {account, period?: {start, end}} → spend and payment terms of one of the caller’s accounts. Buyer key required.' })
  async accountFinancials(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'get_account_financials', request);
  }

  @Mutation(() => GraphQLJSONObject, { description: 'provide_performance_feedback: {media_buy_id, measurement_period, performance_index, package_id?, metric_type?, feedback_source?} → {success}. Buyer key required.' })
  async providePerformanceFeedback(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'provide_performance_feedback', request);
  }

  @Mutation(() => GraphQLJSONObject, { description: 'build_creative: {message?, target_format_id | target_format_ids, account?, creative_manifest?, include_preview?, macro_values?} → a creative manifest (and a preview). Buyer key required.' })
  async buildCreative(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'build_creative', request);
  }

  @Mutation(() => GraphQLJSONObject, { description: 'preview_creative: {request_type single|batch, format_id, creative_manifest, inputs?, output_format?} → preview URLs (and HTML on request), kept for their expiry. Buyer key required.' })
  async previewCreative(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'preview_creative', request);
  }

  @Query(() => GraphQLJSONObject, { description: 'list_creatives: {filters {status, format_types}, limit, cursor} with a summary. Buyer key required.' })
  async creatives(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject, { nullable: true }) request?: Record<string, unknown>) {
    return runTask(ctx, 'list_creatives', request ?? {});
  }

  @Query(() => GraphQLJSONObject, { description: 'get_media_buy_delivery: {media_buy_id | media_buy_ids, granularity daily|hourly, date_range {start, end}}. Buyer key required.' })
  async mediaBuyDelivery(@Ctx() ctx: GraphQLContext, @Arg('request', () => GraphQLJSONObject) request: Record<string, unknown>) {
    return runTask(ctx, 'get_media_buy_delivery', request);
  }

  @Mutation(() => String, { description: 'Moves the gateway clock forward and runs the built-in ad server up to the new time (demos and tests). Seller or admin key. Returns the new time.' })
  async advanceClock(@Ctx() ctx: GraphQLContext, @Arg('seconds', () => Int) seconds: number) {
    const c = operatorCommand(ctx);
    if (seconds < 1 || seconds > 366 * 86_400) throw new AppError('VALIDATION_ERROR', 'seconds must be between 1 and 31622400 (a year)', 'seconds');
    const now = await ctx.app.gatewayClock.advance(seconds, c.principal);
    await ctx.app.adServer.tick();
    return settled(ctx, now.toISOString());
  }

  @Query(() => GraphQLJSONObject, { description: 'tasks_get: status and history of one of the caller’s tasks. Buyer key required.' })
  async task(@Ctx() ctx: GraphQLContext, @Arg('taskId', () => ID) taskId: string) {
    return runTask(ctx, 'tasks_get', { task_id: taskId });
  }

  @Mutation(() => String, { description: 'Operator: approve a waiting task (→ working → completed). Seller or admin key. Returns the new status.' })
  async approveTask(@Ctx() ctx: GraphQLContext, @Arg('taskId', () => ID) taskId: string, @Arg('note', () => String, { nullable: true }) note?: string) {
    return settled(ctx, await approveTask(ctx.app.ports, taskId, note ?? undefined, operatorCommand(ctx)));
  }

  @Mutation(() => String, { description: 'Operator: reject a waiting task (→ rejected). Seller or admin key.' })
  async rejectTask(@Ctx() ctx: GraphQLContext, @Arg('taskId', () => ID) taskId: string, @Arg('reason') reason: string) {
    return settled(ctx, await rejectTask(ctx.app.ports, taskId, reason, operatorCommand(ctx)));
  }

  @Mutation(() => String, { description: 'Operator: ask the buyer for input (→ input-required). Seller or admin key.' })
  async requestInput(@Ctx() ctx: GraphQLContext, @Arg('taskId', () => ID) taskId: string, @Arg('reason') reason: string) {
    return settled(ctx, await requestInput(ctx.app.ports, taskId, reason, operatorCommand(ctx)));
  }
}
