import {
  getArgumentValues,
  getDirectiveValues,
  getNamedType,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  isObjectType,
  type GraphQLField,
  type GraphQLObjectType,
  type SelectionNode,
  getNullableType,
  isListType,
  isLeafType,
  Kind,
  Lexer,
  Source,
  TokenKind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { isObject } from '../shared/objects';

/**
 * The static price of a GraphQL operation, known before it runs (after GitHub's and Shopify's
 * models), in points:
 *
 * - the document: 1 point per TOKENS_PER_POINT tokens (parsing and validating it is work too, and
 *   this is what lets an oversized document be refused while it is being parsed);
 * - each field of the Query root: 1 point (one read), plus, when it returns a list or a page,
 *   1 point per item it may return: its size argument (`limit`, `first`, `request.limit`,
 *   `request.pagination.max_results`, the ids or domains asked for), else ROOT_PAGE items;
 * - each field of the Mutation root: MUTATION_POINTS (a write, an event appended);
 * - each object field below the root: 1 point plus its selections; a list of objects: that per
 *   item, for its `first`/`limit` items or ASSUMED_NESTED_LIST; scalars and enums: 0;
 * - introspection: a fixed price per meta field (INTROSPECTION_POINTS).
 *
 * Aliases are fields like any other, so a document that repeats a field under 15,000 aliases
 * costs 15,000 times as much.
 */
export const TOKENS_PER_POINT = 5;
export const ROOT_PAGE = 50;
export const ASSUMED_NESTED_LIST = 5;
export const MUTATION_POINTS = 10;

/**
 * Introspection is answered from the schema in memory, whose size is bounded: a fixed price per
 * meta field whatever it selects (the standard introspection query of GraphiQL and codegen tools
 * costs ~130 points), and its nesting does not count towards the depth limit.
 */
const INTROSPECTION_POINTS: Readonly<Record<string, number>> = { __typename: 0, __type: 10, __schema: 100 };

/** The price of one operation, and how it breaks down. */
export interface OperationCost {
  total: number;
  document: number;
  fields: number;
  depth: number;
}

/** How many items a field's arguments ask for, where they say. */
function requestedItems(args: Record<string, unknown>): number | undefined {
  const request = isObject(args.request) ? args.request : {};
  const pagination = isObject(request.pagination) ? request.pagination : {};
  for (const n of [args.first, args.limit, request.limit, pagination.max_results]) {
    if (typeof n === 'number' && Number.isFinite(n)) return Math.max(1, Math.ceil(n));
  }
  for (const list of [args.domains, request.media_buy_ids, request.creative_ids, request.buyer_refs]) {
    if (Array.isArray(list)) return Math.max(1, list.length);
  }
  return undefined;
}

/** A field's price, given its arguments (read only where they matter) and its selections' price. */
function fieldPoints(parent: GraphQLObjectType, field: GraphQLField<unknown, unknown>, args: () => Record<string, unknown>, children: number): number {
  if (parent.name === 'Mutation') return MUTATION_POINTS + children;
  const returnsList = isListType(getNullableType(field.type));
  const perItem = isLeafType(getNamedType(field.type)) ? 1 : 1 + children;
  if (parent.name === 'Query') {
    const items = (field.args.length ? requestedItems(args()) : undefined) ?? (returnsList ? ROOT_PAGE : undefined);
    return 1 + (items === undefined ? children : items * perItem);
  }
  if (isLeafType(getNamedType(field.type))) return 0;
  if (!returnsList) return perItem;
  const items = field.args.some((a) => a.name === 'first' || a.name === 'limit') ? requestedItems(args()) : undefined;
  return (items ?? ASSUMED_NESTED_LIST) * perItem;
}

/**
 * Prices a selection set on `parent`. Written for this rather than taken from
 * graphql-query-complexity, which builds a TypeInfo and a ValidationContext per call: ~13 µs for
 * a one-field query, where this walk takes about one (the limits must cost under 3 % of a request).
 */
function selectionPoints(schema: GraphQLSchema, parent: GraphQLObjectType, set: SelectionSetNode, ctx: { fragments: Map<string, FragmentDefinitionNode>; variables: Record<string, unknown>; spreads: number }): number {
  let total = 0;
  for (const s of set.selections) {
    if (!included(s, ctx.variables)) continue;
    if (s.kind === Kind.FIELD) {
      const name = s.name.value;
      if (name in INTROSPECTION_POINTS) {
        total += INTROSPECTION_POINTS[name]!;
        continue;
      }
      const field = parent.getFields()[name];
      if (!field) continue;
      const named = getNamedType(field.type);
      const children = s.selectionSet && isObjectType(named) ? selectionPoints(schema, named, s.selectionSet, ctx) : 0;
      total += fieldPoints(parent, field, () => getArgumentValues(field, s, ctx.variables), children);
    } else {
      const fragment = s.kind === Kind.INLINE_FRAGMENT ? s : ctx.fragments.get(s.name.value);
      // Validation refuses fragment cycles and unknown fragments; the count keeps this walk finite regardless.
      if (!fragment || ++ctx.spreads > 10_000) continue;
      const on = fragment.typeCondition ? schema.getType(fragment.typeCondition.name.value) : parent;
      if (isObjectType(on)) total += selectionPoints(schema, on, fragment.selectionSet, ctx);
    }
  }
  return total;
}

/** @skip / @include, as execution will read them. */
function included(node: SelectionNode, variables: Record<string, unknown>): boolean {
  if (!node.directives?.length) return true;
  if (getDirectiveValues(GraphQLSkipDirective, node, variables)?.if === true) return false;
  return getDirectiveValues(GraphQLIncludeDirective, node, variables)?.if !== false;
}

function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  return fragments;
}

const documentFacts = new WeakMap<DocumentNode, { tokens: number }>();

/** Tokens in a parsed document (Apollo hands the same node for a repeated query: counted once). */
export function tokenCount(document: DocumentNode): number {
  let facts = documentFacts.get(document);
  if (!facts) {
    let tokens = 0;
    for (let t = document.loc?.startToken; t && t.kind !== '<EOF>'; t = t.next ?? undefined) if (t.kind !== '<SOF>') tokens++;
    facts = { tokens };
    documentFacts.set(document, facts);
  }
  return facts.tokens;
}

/** The deepest nesting of selection sets in the operation, through its fragments. */
export function selectionDepth(document: DocumentNode, operation: OperationDefinitionNode): number {
  const fragments = fragmentsOf(document);
  const walk = (set: SelectionSetNode, visiting: Set<string>): number => {
    let deepest = 0;
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) deepest = Math.max(deepest, s.selectionSet && !(s.name.value in INTROSPECTION_POINTS) ? 1 + walk(s.selectionSet, visiting) : 1);
      else if (s.kind === Kind.INLINE_FRAGMENT) deepest = Math.max(deepest, walk(s.selectionSet, visiting));
      else {
        const f = fragments.get(s.name.value);
        // Validation refuses fragment cycles; the guard keeps this walk finite regardless.
        if (f && !visiting.has(f.name.value)) deepest = Math.max(deepest, walk(f.selectionSet, new Set(visiting).add(f.name.value)));
      }
    }
    return deepest;
  };
  return walk(operation.selectionSet, new Set());
}

/**
 * Prices the operation with its variables. Undefined when the variables do not fit the operation
 * (execution then reports that, and nothing is run to pay for).
 */
export function operationCost(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined): OperationCost | undefined {
  const root = operation.operation === 'mutation' ? schema.getMutationType() : operation.operation === 'subscription' ? schema.getSubscriptionType() : schema.getQueryType();
  if (!root) return undefined;
  const doc = Math.ceil(tokenCount(document) / TOKENS_PER_POINT);
  let fields: number;
  try {
    fields = selectionPoints(schema, root, operation.selectionSet, { fragments: fragmentsOf(document), variables: variables ?? {}, spreads: 0 });
  } catch {
    return undefined; // arguments that do not coerce: execution refuses them with their own error
  }
  return { total: doc + fields, document: doc, fields, depth: selectionDepth(document, operation) };
}

/**
 * Whether a document has more than `max` tokens, lexing no further than that. A token is at least
 * one character, so a shorter document is answered without lexing at all; a longer one by
 * graphql-js's own lexer (its syntax errors are left to the parse that follows).
 */
export function hasMoreTokensThan(source: string, max: number): boolean {
  if (source.length <= max) return false;
  const lexer = new Lexer(new Source(source));
  try {
    for (let n = 0; n <= max; n++) if (lexer.advance().kind === TokenKind.EOF) return false;
  } catch {
    return false;
  }
  return true;
}
