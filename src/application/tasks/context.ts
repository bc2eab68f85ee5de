import type { ZodType } from 'zod';
import type { App } from '../../app';
import type { Principal } from '../api-keys';

/** What every task handler receives besides its input: the app and the authenticated buyer. */
export interface TaskContext {
  app: App;
  principal: Principal;
  requestId?: string;
}

export interface TaskDefinition {
  /** One line for the OpenAPI document and the docs page. */
  readonly description: string;
  /** The request schema (zod): validation here, and the OpenAPI request body. */
  readonly input: ZodType;
  /** Runs the task; the input is the raw request body (each task validates its own). */
  run(input: unknown, ctx: TaskContext): Promise<Record<string, unknown>>;
}
