import { taskDecider, taskStream } from '../../domain/task/task';
import { ownerScopedId, publicId } from '../../shared/ids';
import { handleCommand } from '../command-handler';
import type { ResolvedAccount } from '../accounts';
import type { TaskContext } from '../tasks/context';
import { takeArm } from './directives';
import { forcedOutage } from './upstreams';
import { untilProjected } from '../projected';

type Obj = Record<string, unknown>;

/**
 * What a sandbox's controller directives make of its next get_products (AdCP 3.1): the forced
 * `submitted` arm (`force_get_products_arm`), for a curated read only (brief or refine; a
 * wholesale read is synchronous feed access and never takes it); nothing for a live account or
 * none. The submitted answer's task is recorded under the forced task_id, so tasks_get and
 * get_task_status find it, and it waits for the controller (force_task_completion).
 */
export async function forcedDiscoveryArm(ctx: TaskContext, account: ResolvedAccount | undefined, buyingMode: string | undefined, input: Obj): Promise<Obj | undefined> {
  if (!account?.sandbox || buyingMode === 'wholesale') return undefined;
  const now = ctx.ports.clock().toISOString();
  const arm = await takeArm('get_products', ctx, now);
  if (!arm) return undefined;
  const taskId = ownerScopedId(ctx.principal.org, arm.task_id);
  const message = arm.message ?? 'Product curation queued';
  const cmd = { now, principal: ctx.principal.keyId, correlationId: ctx.requestId };
  await handleCommand(ctx.ports.store, taskStream(taskId), taskDecider, {
    type: 'SubmitTask',
    taskId,
    taskType: 'get_products',
    owner: ctx.principal.org,
    resourceId: taskId,
    ...(input.push_notification_config && typeof input.push_notification_config === 'object' ? { pushNotificationConfig: input.push_notification_config as Obj } : {}),
    ...(input.context && typeof input.context === 'object' ? { context: input.context as Obj } : {}),
    awaitsController: true,
    ...(ctx.wire === 'adcp3' ? { wire: 'adcp3' as const } : {}),
    ...(ctx.a2a ? { a2a: ctx.a2a } : {}),
    message,
    now,
  }, cmd);
  await untilProjected(ctx.ports);
  return { status: 'pending', task_id: publicId(taskId), message };
}

/**
 * STALE_RESPONSE, when the sandbox forced get_products' upstream unavailable
 * (`force_upstream_unavailable`): the answer is the catalog as the seller last read it, and this
 * advisory (error-details/stale-response.json) says so, aged from the moment the upstream went
 * away. It rides in the answer's `errors[]`; the call still succeeds.
 */
export async function staleAdvisory(ctx: TaskContext, account: ResolvedAccount | undefined): Promise<Obj | undefined> {
  if (!account?.sandbox) return undefined;
  const outage = await forcedOutage(ctx, 'get_products');
  if (!outage) return undefined;
  const age = Math.max(0, Math.floor((ctx.ports.clock().getTime() - Date.parse(outage.since)) / 1000));
  return {
    code: 'STALE_RESPONSE',
    message: `upstream ${outage.upstream} is unreachable; products are served from the last catalog read`,
    field: 'products',
    recovery: 'transient',
    details: { served_from_cache: true, cache_age_seconds: age, freshness_target_seconds: 0, upstream: { name: outage.upstream }, original_error: { code: 'SERVICE_UNAVAILABLE', message: 'upstream unreachable (forced by the compliance test controller)' } },
  };
}
