import {
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
  valueFromASTUntyped,
  type FieldNode,
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
 * - a cursor connection or a page (a type named *Connection or *Page): 1 point, and its lists
 *   (`edges`, `entries`) priced per item for the page its field asked for (`first`/`limit`, else
 *   as a list would be);
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

/** The arguments that size a list (read by requestedItems); no other argument changes a price. */
const SIZE_ARGUMENTS = new Set(['first', 'limit', 'request', 'domains']);

/**
 * The size arguments a field was given, as plain values (variables substituted, defaults applied).
 * Not coerced as execution will coerce them: requestedItems only believes finite numbers and
 * arrays, so a value that would not coerce prices as one not given, and execution refuses it.
 * graphql-js's getArgumentValues coerces every argument, which cost most of a by-id query's price.
 */
function sizeArguments(field: GraphQLField<unknown, unknown>, node: FieldNode, variables: Record<string, unknown>): Record<string, unknown> | undefined {
  let args: Record<string, unknown> | undefined;
  for (const arg of field.args) {
    if (!SIZE_ARGUMENTS.has(arg.name)) continue;
    const given = node.arguments?.find((a) => a.name.value === arg.name);
    const value = given ? valueFromASTUntyped(given.value, variables) : arg.defaultValue;
    if (value !== undefined) (args ??= {})[arg.name] = value;
  }
  return args;
}

/** What pricing needs to know of a field, from the schema: the same for every operation. */
interface FieldFacts {
  field: GraphQLField<unknown, unknown>;
  /** Its named type when that is an object type (its selections are priced), else undefined. */
  objectType: GraphQLObjectType | undefined;
  returnsList: boolean;
  returnsLeaf: boolean;
  /** Whether it takes any argument that sizes a list. */
  sized: boolean;
  /** Whether it returns a cursor connection or a page (its size argument sizes the lists in it). */
  connection: boolean;
}

// Read once per field: graphql-js's type predicates (instanceof checks with a cross-realm
// fallback outside NODE_ENV=production) cost more per request than the rest of the walk.
const fieldFacts = new WeakMap<GraphQLField<unknown, unknown>, FieldFacts>();

function factsOfField(field: GraphQLField<unknown, unknown>): FieldFacts {
  let facts = fieldFacts.get(field);
  if (!facts) {
    const named = getNamedType(field.type);
    facts = {
      field,
      objectType: isObjectType(named) ? named : undefined,
      returnsList: isListType(getNullableType(field.type)),
      returnsLeaf: isLeafType(named),
      sized: field.args.some((a) => SIZE_ARGUMENTS.has(a.name)),
      connection: isObjectType(named) && /(Connection|Page)$/.test(named.name),
    };
    fieldFacts.set(field, facts);
  }
  return facts;
}

/**
 * A field's price, given its size arguments and its selections' price. `pageSize`: the parent is
 * a connection, whose lists (`edges`) hold as many items as the connection's field asked for.
 */
function fieldPoints(parent: GraphQLObjectType, facts: FieldFacts, args: Record<string, unknown> | undefined, children: number, pageSize?: number): number {
  if (parent.name === 'Mutation') return MUTATION_POINTS + children;
  // A connection is one read; what it costs per item is priced on its edges.
  if (facts.connection) return 1 + children;
  if (pageSize !== undefined && facts.returnsList) return pageSize * (facts.returnsLeaf ? 1 : 1 + children);
  const perItem = facts.returnsLeaf ? 1 : 1 + children;
  if (parent.name === 'Query') {
    const items = (args ? requestedItems(args) : undefined) ?? (facts.returnsList ? ROOT_PAGE : undefined);
    return 1 + (items === undefined ? children : items * perItem);
  }
  if (facts.returnsLeaf) return 0;
  if (!facts.returnsList) return perItem;
  return ((args ? requestedItems(args) : undefined) ?? ASSUMED_NESTED_LIST) * perItem;
}

/** What one pricing walk shares: the document's fragments, the variables, and what it has priced. */
interface PricingWalk {
  fragments: Map<string, FragmentDefinitionNode>;
  variables: Record<string, unknown>;
  /** A named fragment's price, per page size it was spread under: each is walked once (made on the first spread). */
  fragmentPoints?: Map<string, number>;
  /** Selections read so far, against MAX_PRICING_VISITS. */
  visits: number;
  /**
   * Whether the price read anything a request may change (a size argument given in the document,
   * a directive): otherwise it is the same for every request of this operation, and kept.
   */
  variableDependent: boolean;
}

/**
 * A walk that reads more selections than this prices the operation as unpayable rather than going
 * on: with each fragment priced once, only a document far past the token limit gets here.
 */
const MAX_PRICING_VISITS = 100_000;

/**
 * Prices a selection set on `parent`. Written for this rather than taken from
 * graphql-query-complexity, which builds a TypeInfo and a ValidationContext per call: ~13 µs for
 * a one-field query, where this walk takes well under one (the limits must cost under 3 % of a
 * request). A fragment spread twice costs twice, but is walked once: a chain of fragments each
 * spreading the next twice is priced (exponentially) in time linear in its length.
 */
function selectionPoints(schema: GraphQLSchema, parent: GraphQLObjectType, set: SelectionSetNode, walk: PricingWalk, pageSize?: number): number {
  let total = 0;
  for (const s of set.selections) {
    if (++walk.visits > MAX_PRICING_VISITS) return Infinity;
    if (s.directives?.length) walk.variableDependent = true;
    if (!included(s, walk.variables)) continue;
    if (s.kind === Kind.FIELD) {
      const name = s.name.value;
      if (name in INTROSPECTION_POINTS) {
        total += INTROSPECTION_POINTS[name]!;
        continue;
      }
      const field = parent.getFields()[name];
      if (!field) continue;
      const facts = factsOfField(field);
      if (facts.sized && s.arguments?.length) walk.variableDependent = true;
      const args = facts.sized ? sizeArguments(field, s, walk.variables) : undefined;
      const page = facts.connection ? ((args ? requestedItems(args) : undefined) ?? (parent.name === 'Query' ? ROOT_PAGE : ASSUMED_NESTED_LIST)) : undefined;
      const children = s.selectionSet && facts.objectType ? selectionPoints(schema, facts.objectType, s.selectionSet, walk, page) : 0;
      total += fieldPoints(parent, facts, args, children, pageSize);
    } else if (s.kind === Kind.INLINE_FRAGMENT) {
      const on = s.typeCondition ? schema.getType(s.typeCondition.name.value) : parent;
      if (isObjectType(on)) total += selectionPoints(schema, on, s.selectionSet, walk, pageSize);
    } else {
      total += fragmentPoints(schema, s.name.value, walk, pageSize);
    }
  }
  return total;
}

function fragmentPoints(schema: GraphQLSchema, name: string, walk: PricingWalk, pageSize: number | undefined): number {
  const key = `${name}\u0000${pageSize ?? ''}`;
  const memo = (walk.fragmentPoints ??= new Map());
  const known = memo.get(key);
  if (known !== undefined) return known;
  // Validation refuses fragment cycles and unknown fragments; a cycle met here prices as nothing.
  memo.set(key, 0);
  const fragment = walk.fragments.get(name);
  const on = fragment && schema.getType(fragment.typeCondition.name.value);
  const points = fragment && isObjectType(on) ? selectionPoints(schema, on, fragment.selectionSet, walk, pageSize) : 0;
  memo.set(key, points);
  return points;
}

/** @skip / @include, as execution will read them. */
function included(node: SelectionNode, variables: Record<string, unknown>): boolean {
  if (!node.directives?.length) return true;
  if (getDirectiveValues(GraphQLSkipDirective, node, variables)?.if === true) return false;
  return getDirectiveValues(GraphQLIncludeDirective, node, variables)?.if !== false;
}

/** What a parsed document always costs, whatever its variables: computed once per document. */
interface DocumentFacts {
  tokens: number;
  fragments: Map<string, FragmentDefinitionNode>;
  /** Per operation: its depth, and the defaults of its variables (applied as execution will). */
  operations: WeakMap<OperationDefinitionNode, OperationFacts>;
}

interface OperationFacts {
  depth: number;
  defaults: [string, unknown][];
  /** Its fields' price, once a walk found it depends on nothing a request sends (PricingWalk.variableDependent). */
  fields?: number;
}

// Apollo hands the same DocumentNode for a repeated query (its parsed-document cache), so a
// client's usual operations are walked for these once.
const documentFacts = new WeakMap<DocumentNode, DocumentFacts>();

function factsOf(document: DocumentNode): DocumentFacts {
  let facts = documentFacts.get(document);
  if (!facts) {
    let tokens = 0;
    for (let t = document.loc?.startToken; t && t.kind !== '<EOF>'; t = t.next ?? undefined) if (t.kind !== '<SOF>') tokens++;
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
    facts = { tokens, fragments, operations: new WeakMap() };
    documentFacts.set(document, facts);
  }
  return facts;
}

function operationFacts(document: DocumentNode, operation: OperationDefinitionNode): OperationFacts {
  const facts = factsOf(document);
  let op = facts.operations.get(operation);
  if (!op) {
    const defaults: [string, unknown][] = [];
    for (const v of operation.variableDefinitions ?? []) if (v.defaultValue) defaults.push([v.variable.name.value, valueFromASTUntyped(v.defaultValue)]);
    op = { depth: selectionDepth(document, operation), defaults };
    facts.operations.set(operation, op);
  }
  return op;
}

/** Tokens in a parsed document (counted once per document). */
export function tokenCount(document: DocumentNode): number {
  return factsOf(document).tokens;
}

/**
 * The deepest nesting of selection sets in the operation, through its fragments. Each fragment's
 * depth is worked out once (it does not depend on where it is spread), so the walk is linear in
 * the document whatever its spreads do.
 */
export function selectionDepth(document: DocumentNode, operation: OperationDefinitionNode): number {
  const { fragments } = factsOf(document);
  const fragmentDepth = new Map<string, number>();
  const walk = (set: SelectionSetNode): number => {
    let deepest = 0;
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) deepest = Math.max(deepest, s.selectionSet && !(s.name.value in INTROSPECTION_POINTS) ? 1 + walk(s.selectionSet) : 1);
      else if (s.kind === Kind.INLINE_FRAGMENT) deepest = Math.max(deepest, walk(s.selectionSet));
      else {
        const name = s.name.value;
        let depth = fragmentDepth.get(name);
        if (depth === undefined) {
          // Validation refuses fragment cycles; one met here counts as nothing.
          fragmentDepth.set(name, 0);
          const f = fragments.get(name);
          depth = f ? walk(f.selectionSet) : 0;
          fragmentDepth.set(name, depth);
        }
        deepest = Math.max(deepest, depth);
      }
    }
    return deepest;
  };
  return walk(operation.selectionSet);
}

/**
 * Prices the operation with its variables (before execution has coerced them); undefined when
 * they do not fit its directives (execution then reports that, and nothing is run to pay for).
 * The depth and the document's share are known per document; the fields' share is walked each
 * time when list sizes may come from variables or directives decide what runs, else once per
 * operation (a typed query of twenty fields walked every time cost more than its whole check).
 */
export function operationCost(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined): OperationCost | undefined {
  const root = operation.operation === 'mutation' ? schema.getMutationType() : operation.operation === 'subscription' ? schema.getSubscriptionType() : schema.getQueryType();
  if (!root) return undefined;
  const facts = factsOf(document);
  const op = operationFacts(document, operation);
  const doc = Math.ceil(facts.tokens / TOKENS_PER_POINT);
  let fields = op.fields;
  if (fields === undefined) {
    let values = variables ?? {};
    if (op.defaults.length) {
      values = { ...values };
      for (const [name, value] of op.defaults) if (values[name] === undefined) values[name] = value;
    }
    const walk: PricingWalk = { fragments: facts.fragments, variables: values, visits: 0, variableDependent: false };
    try {
      fields = selectionPoints(schema, root, operation.selectionSet, walk);
    } catch {
      return undefined; // an @skip / @include condition that does not coerce: execution refuses it
    }
    // Past the walk's budget, or past what a number holds exactly: more than any limit allows.
    if (!(fields <= Number.MAX_SAFE_INTEGER)) fields = Number.MAX_SAFE_INTEGER;
    if (!walk.variableDependent) op.fields = fields;
  }
  return { total: doc + fields, document: doc, fields, depth: op.depth };
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
