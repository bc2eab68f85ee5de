import { runTaskConsistently, type TaskDefinition } from '../application/tasks/context';
import { AppError } from '../shared/errors';
import type { GraphQLContext } from './context';

/** `budget_range.min` → `budgetRange.min`: error fields in the caller's (GraphQL) spelling. */
export function camelField(field: string): string {
  return field.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
}

/** Runs a task for the calling buyer; the same handler as the REST shim and MCP. */
export async function runTask(ctx: GraphQLContext, task: TaskDefinition, input: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (!ctx.principal || ctx.principal.role !== 'buyer') throw new AppError('UNAUTHENTICATED', 'a Bearer API key with role buyer is required');
  try {
    return await runTaskConsistently(task, JSON.parse(JSON.stringify(input)), { app: ctx.app, principal: ctx.principal, requestId: ctx.requestId });
  } catch (err) {
    if (err instanceof AppError && err.field) {
      const message = err.message.startsWith(err.field) ? camelField(err.field) + err.message.slice(err.field.length) : err.message;
      throw new AppError(err.code, message, camelField(err.field), err.details);
    }
    throw err;
  }
}
