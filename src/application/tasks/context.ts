import type { App } from '../../app';
import type { Principal } from '../api-keys';

/** What every task handler receives besides its input: the app and the authenticated buyer. */
export interface TaskContext {
  app: App;
  principal: Principal;
  requestId?: string;
}

export interface TaskDefinition {
  /** Runs the task; the input is the raw request body (each task validates its own). */
  run(input: unknown, ctx: TaskContext): Promise<Record<string, unknown>>;
}
