import type { ZodType } from 'zod';
import type { App } from '../../app';
import type { Principal } from '../api-keys';

/** What every task handler receives besides its input: the app and the authenticated buyer. */
export interface TaskContext {
  app: App;
  principal: Principal;
  requestId?: string;
}

/** Runs a task and, for a mutating one, waits until the read models show what it wrote. */
export async function runTaskConsistently(task: TaskDefinition, input: unknown, ctx: TaskContext): Promise<Record<string, unknown>> {
  const result = await task.run(input, ctx);
  if (task.mutating) await ctx.app.projections.waitFor(await ctx.app.store.headPosition());
  return result;
}

export interface TaskDefinition {
  /** One line for the OpenAPI document and the docs page. */
  readonly description: string;
  /** The request schema (zod): validation here, and the OpenAPI request body. */
  readonly input: ZodType;
  /** Writes events: the bindings answer only once projections show the effect (read-your-writes). */
  readonly mutating?: boolean;
  /** Runs the task; the input is the raw request body (each task validates its own). */
  run(input: unknown, ctx: TaskContext): Promise<Record<string, unknown>>;
}
