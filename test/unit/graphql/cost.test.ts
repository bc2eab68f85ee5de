import { getIntrospectionQuery, parse, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { gatewaySchema } from '../../../src/graphql/schema';
import { hasMoreTokensThan, operationCost, ROOT_PAGE, tokenCount } from '../../../src/graphql/cost';

describe('the static price of a GraphQL operation', () => {
  let schema: GraphQLSchema;
  beforeAll(async () => {
    schema = await gatewaySchema();
  });
  const price = (query: string, variables?: Record<string, unknown>, operationName?: string) => {
    const document = parse(query);
    const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition' && (!operationName || d.name?.value === operationName))!;
    return operationCost(schema, document, operation, variables)!;
  };

  it('charges a root list for the items it may return, sized by its arguments, else a default page', () => {
    expect(price('{ products { productId } }').fields).toBe(1 + ROOT_PAGE);
    expect(price('{ receivedWebhooks(limit: 3) { id } }').fields).toBe(1 + 3);
    expect(price('query($r: JSONObject) { mediaBuys(request: $r) }', { r: { media_buy_ids: ['a', 'b'] } }).fields).toBe(1 + 2);
    expect(price('{ creatives(request: {pagination: {max_results: 7}}) }').fields).toBe(1 + 7);
    // Nested lists of objects count ASSUMED_NESTED_LIST items, each 1 + its selections.
    expect(price('{ products { pricingOptions { pricingOptionId } } }').fields).toBe(1 + ROOT_PAGE * (1 + 5 * 1));
  });

  it('multiplies by aliases, follows fragments, and skips what @skip / @include leave out', () => {
    const one = price('{ products { productId } }').fields;
    expect(price('{ a: products { productId } b: products { productId } c: products { productId } }').fields).toBe(3 * one);
    expect(price('{ ...F } fragment F on Query { products { productId } }').fields).toBe(one);
    expect(price('query($s: Boolean!) { a: products @skip(if: $s) { productId } b: products { productId } }', { s: true }).fields).toBe(one);
    expect(price('query($s: Boolean!) { a: products @include(if: $s) { productId } }', { s: false }).fields).toBe(0);
  });

  it('prices one parsed document again for each request’s variables, and keeps the price of one that reads none', () => {
    const sized = parse('query($n: Int) { receivedWebhooks(limit: $n) { id } }');
    const sizedOp = sized.definitions[0] as OperationDefinitionNode;
    expect([3, 9, 3].map((n) => operationCost(schema, sized, sizedOp, { n })!.fields)).toEqual([1 + 3, 1 + 9, 1 + 3]);
    const skipped = parse('query($s: Boolean!) { products @skip(if: $s) { productId } }');
    const skippedOp = skipped.definitions[0] as OperationDefinitionNode;
    expect([true, false, true].map((s) => operationCost(schema, skipped, skippedOp, { s })!.fields)).toEqual([0, 1 + ROOT_PAGE, 0]);
    const typed = parse('query($id: ID!) { mediaBuy(id: $id) { id packages { id budget } } }');
    const typedOp = typed.definitions[0] as OperationDefinitionNode;
    const first = operationCost(schema, typed, typedOp, { id: 'a' })!;
    expect(operationCost(schema, typed, typedOp, { id: 'b' })).toEqual(first);
    expect(first.fields).toBe(price('query($id: ID!) { mediaBuy(id: $id) { id packages { id budget } } }', { id: 'c' }).fields);
  });

  it('charges each mutation 10 points and the document 1 point per 5 tokens', () => {
    expect(price('mutation { revokeApiKey(keyId: "k") }').fields).toBe(10);
    const query = '{ __typename }';
    expect(tokenCount(parse(query))).toBe(3);
    expect(price(query).document).toBe(1);
  });

  it('prices the standard introspection query within the default limits (GraphiQL and codegen must work)', () => {
    const cost = price(getIntrospectionQuery());
    expect(cost.total).toBeLessThan(200);
    expect(cost.depth).toBe(1);
  });

  it('prices a connection per item of the page its field asks for, nested fields included', () => {
    // 1 for the connection, then per edge: the edge (1), its node (1) and the node's task (1); pageInfo 1.
    expect(price('{ mediaBuysConnection(first: 10) { edges { node { id task { id } } } pageInfo { hasNextPage } } }').fields).toBe(1 + 10 * (1 + 1 + 1) + 1);
    // Without first: the argument's default (20).
    expect(price('{ mediaBuysConnection { edges { cursor } } }').fields).toBe(1 + 20);
    expect(price('query($n: Int) { mediaBuysConnection(first: $n) { edges { cursor } } }', { n: 3 }).fields).toBe(1 + 3);

    // A page (a type named *Page) is priced the same way: its lists hold as many items as its limit.
    expect(price('{ registryFeed(limit: 30) { entries { eventId } cursor freshness { retentionDays } } }').fields).toBe(1 + 30 * 1 + 1);
    expect(price('{ registryFeed { entries { eventId } } }').fields).toBe(1 + 100);
  });

  it('measures depth through fragments', () => {
    expect(price('{ products { pricingOptions { pricingOptionId } } }').depth).toBe(3);
    expect(price('{ ...F } fragment F on Query { products { ...G } } fragment G on Product { pricingOptions { pricingOptionId } }').depth).toBe(3);
  });

  it('counts tokens only as far as the limit, and not at all for a source shorter than it', () => {
    expect(hasMoreTokensThan('{ a }', 2)).toBe(true);
    expect(hasMoreTokensThan('{ a }', 3)).toBe(false);
    expect(hasMoreTokensThan('{ a }', 100)).toBe(false);
    expect(hasMoreTokensThan(`{ ${'a '.repeat(10_000)}`, 5_000)).toBe(true);
    // A syntax error is the parser's to report, with its location.
    expect(hasMoreTokensThan(`"unterminated ${'x'.repeat(10)}`, 3)).toBe(false);
  });
});
