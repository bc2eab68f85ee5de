import { GraphQLScalarType, Kind, type ValueNode } from 'graphql';
import { GraphQLJSONObject as LibraryJSONObject } from 'graphql-scalars';
import { AppError } from '../shared/errors';
import { FORBIDDEN_KEY_MESSAGE, hasForbiddenKey } from '../shared/forbidden-keys';

/** Whether an object literal in a document holds a `__proto__` key, or a `constructor` object with a `prototype`. */
function literalHasForbiddenKey(node: ValueNode): boolean {
  const pending: ValueNode[] = [node];
  while (pending.length) {
    const n = pending.pop()!;
    if (n.kind === Kind.LIST) for (const item of n.values) pending.push(item);
    if (n.kind !== Kind.OBJECT) continue;
    for (const field of n.fields) {
      if (field.name.value === '__proto__') return true;
      if (field.name.value === 'constructor' && field.value.kind === Kind.OBJECT && field.value.fields.some((f) => f.name.value === 'prototype')) return true;
      pending.push(field.value);
    }
  }
  return false;
}

const refused = () => new AppError('VALIDATION_ERROR', FORBIDDEN_KEY_MESSAGE);

/**
 * graphql-scalars' JSONObject, refusing the keys every other binding refuses: written inline in a
 * document (which no body parser sees) or sent as a variable (a GET's query string, graphql-ws).
 * The error is an AppError, so the response carries its words and code (graphql/format-error.ts).
 */
export const GraphQLJSONObject = new GraphQLScalarType({
  ...LibraryJSONObject.toConfig(),
  parseValue(value) {
    if (hasForbiddenKey(value)) throw refused();
    return LibraryJSONObject.parseValue(value);
  },
  parseLiteral(ast, variables) {
    if (literalHasForbiddenKey(ast)) throw refused();
    return LibraryJSONObject.parseLiteral(ast, variables);
  },
});
