import { createHash } from 'node:crypto';
import { ConcurrencyError } from '../../eventstore/port';
import type { CommandContext } from '../command-handler';
import type { TaskContext } from '../tasks/context';
import { ControllerError, requireString } from './errors';

/**
 * One-shot directives a sandbox account registers for its next call (AdCP's
 * `force_create_media_buy_arm`): the next create_media_buy under that account takes the forced
 * path, then the directive is spent. Registered and spent as events on the account's own stream,
 * so two racing creates cannot both take it.
 */
export interface CreateArm {
  arm: 'submitted';
  task_id: string;
  message?: string;
}

const armStream = (owner: string) => `sandbox-create-arm-${createHash('sha256').update(owner).digest('base64url').slice(0, 22)}`;

/** Registers the directive for the caller's next create_media_buy under any of its sandbox accounts. */
export async function forceCreateArm(ctx: TaskContext, params: Record<string, unknown>, cmd: CommandContext): Promise<Record<string, unknown>> {
  if (params.arm !== 'submitted') throw new ControllerError('INVALID_PARAMS', "params.arm must be 'submitted' (the only create_media_buy arm this seller can force)");
  const taskId = requireString(params, 'task_id');
  if (!/^[\w.:-]{1,128}$/.test(taskId)) throw new ControllerError('INVALID_PARAMS', 'params.task_id must be 1-128 of A-Z a-z 0-9 _ . : -');
  const message = typeof params.message === 'string' ? params.message.slice(0, 2000) : undefined;
  const directive: CreateArm = { arm: 'submitted', task_id: taskId, ...(message ? { message } : {}) };
  await ctx.ports.store.append(armStream(ctx.principal.org), [{ type: 'CreateArmForced', data: { owner: ctx.principal.org, ...directive, at: cmd.now }, metadata: { time: cmd.now, principal: cmd.principal } }]);
  return { success: true, forced: { scenario: 'create_media_buy', arm: 'submitted', task_id: taskId }, message: 'the next create_media_buy under a sandbox account answers submitted with this task_id' };
}

/** Takes the caller's pending directive, if any: it applies to this create only. */
export async function takeCreateArm(ctx: TaskContext, now: string): Promise<CreateArm | undefined> {
  const stream = armStream(ctx.principal.org);
  for (let attempt = 0; attempt < 4; attempt++) {
    const history = await ctx.ports.store.readStream(stream);
    const last = history[history.length - 1];
    if (!last || last.type !== 'CreateArmForced') return undefined;
    try {
      await ctx.ports.store.append(stream, [{ type: 'CreateArmUsed', data: { owner: ctx.principal.org, at: now } }], { expectedVersion: history.length });
    } catch (err) {
      if (err instanceof ConcurrencyError) continue;
      throw err;
    }
    const { owner: _o, at: _at, ...arm } = last.data as CreateArm & { owner: string; at: string };
    return arm;
  }
  return undefined;
}
