import { createHash } from 'node:crypto';
import { ConcurrencyError } from '../../eventstore/port';
import type { CommandContext } from '../command-handler';
import type { TaskContext } from '../tasks/context';
import { ControllerError, requireString } from './errors';

/**
 * One-shot directives a sandbox account registers for its next call (AdCP's
 * `force_create_media_buy_arm`, and 3.1's `force_get_products_arm`): the next matching call under
 * one of the caller's sandbox accounts takes the forced path, then the directive is spent.
 * Registered and spent as events on the caller's own stream (one per operation), so two racing
 * calls cannot both take it; a second registration before use replaces the first.
 */
export interface ForcedArm {
  arm: 'submitted';
  task_id: string;
  message?: string;
}
/** The create directive's name since 3.0 (its events keep their types). */
export type CreateArm = ForcedArm;

/** The operations an arm may be forced for, and the names their events and streams carry. */
const OPERATIONS = {
  create_media_buy: { stream: 'sandbox-create-arm', forced: 'CreateArmForced', used: 'CreateArmUsed' },
  get_products: { stream: 'sandbox-get-products-arm', forced: 'GetProductsArmForced', used: 'GetProductsArmUsed' },
} as const;
export type ArmOperation = keyof typeof OPERATIONS;

const armStream = (operation: ArmOperation, owner: string) => `${OPERATIONS[operation].stream}-${createHash('sha256').update(owner).digest('base64url').slice(0, 22)}`;

/** Registers the directive for the caller's next `operation` under any of its sandbox accounts. */
export async function forceArm(operation: ArmOperation, ctx: TaskContext, params: Record<string, unknown>, cmd: CommandContext): Promise<Record<string, unknown>> {
  if (params.arm !== 'submitted') throw new ControllerError('INVALID_PARAMS', `params.arm must be 'submitted' (the only ${operation} arm this seller can force)`);
  const taskId = requireString(params, 'task_id');
  if (!/^[\w.:-]{1,128}$/.test(taskId)) throw new ControllerError('INVALID_PARAMS', 'params.task_id must be 1-128 of A-Z a-z 0-9 _ . : -');
  const message = typeof params.message === 'string' ? params.message.slice(0, 2000) : undefined;
  const directive: ForcedArm = { arm: 'submitted', task_id: taskId, ...(message ? { message } : {}) };
  await ctx.ports.store.append(armStream(operation, ctx.principal.org), [{ type: OPERATIONS[operation].forced, data: { owner: ctx.principal.org, ...directive, at: cmd.now }, metadata: { time: cmd.now, principal: cmd.principal } }]);
  return { success: true, forced: { scenario: operation, arm: 'submitted', task_id: taskId }, message: `the next ${operation} under a sandbox account answers submitted with this task_id` };
}

/** `force_create_media_buy_arm`. */
export const forceCreateArm = (ctx: TaskContext, params: Record<string, unknown>, cmd: CommandContext) => forceArm('create_media_buy', ctx, params, cmd);

/** Takes the caller's pending directive for `operation`, if any: it applies to this call only. */
export async function takeArm(operation: ArmOperation, ctx: TaskContext, now: string): Promise<ForcedArm | undefined> {
  const stream = armStream(operation, ctx.principal.org);
  for (let attempt = 0; attempt < 4; attempt++) {
    const history = await ctx.ports.store.readStream(stream);
    const last = history[history.length - 1];
    if (!last || last.type !== OPERATIONS[operation].forced) return undefined;
    try {
      await ctx.ports.store.append(stream, [{ type: OPERATIONS[operation].used, data: { owner: ctx.principal.org, at: now } }], { expectedVersion: history.length });
    } catch (err) {
      if (err instanceof ConcurrencyError) continue;
      throw err;
    }
    const { owner: _o, at: _at, ...arm } = last.data as ForcedArm & { owner: string; at: string };
    return arm;
  }
  return undefined;
}

/** The create directive, taken by create_media_buy. */
export const takeCreateArm = (ctx: TaskContext, now: string) => takeArm('create_media_buy', ctx, now);
