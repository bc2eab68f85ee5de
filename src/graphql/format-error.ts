import { unwrapResolverError } from '@apollo/server/errors';
import type { GraphQLFormattedError } from 'graphql';
import type { App } from '../services';
import { AppError } from '../shared/errors';
import { MAX_JSON_DEPTH } from '../shared/json-depth';

/**
 * One GraphQL error mapping for the whole schema: AppErrors keep their code and field; anything
 * else is masked (and logged) so no SQL or stack leaks to clients.
 */
export function formatError(app: Pick<App, 'log'>) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = unwrapResolverError(error);
    if (original instanceof AppError) {
      return {
        ...formatted,
        message: original.message,
        // Resolver errors travel in a 200 response (GraphQL over HTTP); the code and field say what failed.
        extensions: { code: original.code, ...(original.field ? { field: original.field } : {}) },
      };
    }
    // A scalar refusing a value (graphql/json-object.ts) throws an AppError; graphql-js and Apollo wrap it.
    const cause = causeOf(error, AppError);
    if (cause) return { ...formatted, message: cause.message, extensions: { code: cause.code, ...(cause.field ? { field: cause.field } : {}) } };
    const code = formatted.extensions?.code;
    // graphql-js parses recursively: a document nested some thousand levels overflows the stack,
    // which Apollo reports as a parse failure in the engine's words.
    if (code === 'GRAPHQL_PARSE_FAILED' && causedBy(error, RangeError)) {
      return { ...formatted, message: `the document nests too deeply to parse (the limit is ${MAX_JSON_DEPTH} levels)` };
    }
    if (code && code !== 'INTERNAL_SERVER_ERROR') return formatted;
    app.log.error({ err: original }, 'unhandled GraphQL error');
    return { message: 'internal error', path: formatted.path, extensions: { code: 'INTERNAL_SERVER_ERROR' } };
  };
}

/** The error, or the first of the errors it wraps (`originalError`, as GraphQL errors nest them), that is a `type`. */
function causeOf<T extends Error>(error: unknown, type: new (...args: never[]) => T): T | undefined {
  for (let e = error, hops = 0; e && hops < 5; e = (e as { originalError?: unknown }).originalError, hops++) if (e instanceof type) return e;
  return undefined;
}

const causedBy = (error: unknown, type: new (...args: never[]) => Error): boolean => causeOf(error, type) !== undefined;

