import type { z, ZodType } from 'zod';
import { parseInput } from '../validation';
import type { TaskPorts } from '../ports';
import type { Principal } from '../api-keys';
import type { A2aTaskRegistration } from '../../domain/task/task';
import { DEFAULT_VERSION, type AdcpRelease } from '../../wire/version';
import { untilProjected } from '../projected';

/** What every task handler receives besides its input: its ports and the authenticated buyer. */
export interface TaskContext {
  ports: TaskPorts;
  principal: Principal;
  requestId?: string;
  /** The public origin the request reached (PUBLIC_URL, else its Host), for links in answers. */
  origin?: string;
  /**
   * The wire the caller speaks: the spec's (REST, GraphQL) or AdCP 3.0 (MCP, A2A). Webhooks for
   * its tasks go out in the same shape, and 3.0 callers are told of synchronous completions too.
   */
  wire?: 'spec' | 'adcp3';
  /** The AdCP release the call negotiated (MCP, A2A): a task it starts is recorded with it. */
  release?: AdcpRelease;
  /** Asked over A2A: how an asynchronous task it starts is registered (conversation, A2A-native push). */
  a2a?: A2aTaskRegistration;
}

/**
 * The release a task started by this call records (`TaskSubmitted.adcp_version`): only one other
 * than 3.0, so a 3.0 task's events stay as they always were (absent means 3.0).
 */
export function recordedRelease(ctx: Pick<TaskContext, 'release'>): { adcpVersion?: AdcpRelease } {
  return ctx.release && ctx.release !== DEFAULT_VERSION ? { adcpVersion: ctx.release } : {};
}

/**
 * Validates the raw request against the task's schema (the one place requests are parsed), runs
 * it, and for a mutating task waits until the read models show what it wrote.
 */
export async function runTaskConsistently(task: TaskDefinition, raw: unknown, ctx: TaskContext): Promise<Record<string, unknown>> {
  const result = await task.run(parseInput(task.input, raw), ctx);
  if (task.mutating) await untilProjected(ctx.ports);
  return result;
}

export interface TaskDefinition<S extends ZodType = ZodType> {
  /** One line for the OpenAPI document and the docs page. */
  readonly description: string;
  /** The request schema (zod): validation, and the OpenAPI request body. */
  readonly input: S;
  /** Writes events: the bindings answer only once projections show the effect (read-your-writes). */
  readonly mutating?: boolean;
  /** Runs the task on an input its schema has already accepted. */
  run(input: z.infer<S>, ctx: TaskContext): Promise<Record<string, unknown>>;
}

/** Ties a task's `run` to its schema's type. */
export function defineTask<S extends ZodType>(task: TaskDefinition<S>): TaskDefinition {
  return task as unknown as TaskDefinition;
}
