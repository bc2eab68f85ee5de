import { tasks } from '../application/tasks';
import { runTaskConsistently } from '../application/tasks/context';
import { canonicalRequest } from '../wire/requests';
import { AppError } from '../shared/errors';
import type { GraphQLContext } from './context';

/** `budget_range.min` → `budgetRange.min`: error fields in the caller's (GraphQL) spelling. */
export function camelField(field: string): string {
  return field.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
}

/** Runs a task for the calling buyer (either request shape); the same handler as the REST shim and MCP. */
export async function runTask(ctx: GraphQLContext, name: string, input: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (!ctx.principal || ctx.principal.role !== 'buyer') throw new AppError('UNAUTHENTICATED', 'a Bearer API key with role buyer is required');
  const principal = ctx.principal;
  return inCallerSpelling(() => {
    const request = canonicalRequest(name, JSON.parse(JSON.stringify(input)) as Record<string, unknown>);
    return runTaskConsistently(tasks[name]!, request, { ports: ctx.app.ports, principal, requestId: ctx.requestId, origin: ctx.origin });
  });
}

/** Runs application work, its errors' fields (and the messages that start with them) in GraphQL's spelling. */
export function inCallerSpelling<T>(work: () => Promise<T>): Promise<T> {
  return withFieldsRenamed(work, camelField);
}

/**
 * Runs `work`; an error's field, and a message that starts with it, are renamed by `rename`
 * (undefined: about the whole input, named `input` in the message).
 */
export async function withFieldsRenamed<T>(work: () => Promise<T>, rename: (field: string) => string | undefined): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof AppError && err.field) {
      const field = rename(err.field);
      const message = err.message.startsWith(err.field) ? `${field ?? 'input'}${err.message.slice(err.field.length)}` : err.message;
      throw new AppError(err.code, message, field, err.details);
    }
    throw err;
  }
}
