import { ApolloServer, HeaderMap } from '@apollo/server';
import { answeredAsWithoutAccept } from '../../src/graphql/http-handler';

/**
 * The /graphql route drops an Accept header that Apollo would answer exactly as it answers none
 * (to spare Apollo negotiating it twice per request). Apollo itself is the oracle: for every
 * header the route drops, Apollo's answer with it and without it must be the same.
 */
const ACCEPTS = [
  'application/json',
  'application/json, text/event-stream',
  'application/json; charset=utf-8',
  'application/json, */*;q=0.1',
  'text/plain, application/json',
  'APPLICATION/JSON',
  '*/*',
  'application/*',
  'application/graphql-response+json',
  'application/graphql-response+json, application/json;q=0.9',
  'application/json;q=0.5, application/graphql-response+json',
  'text/html',
  'text/event-stream',
  'multipart/mixed; deferSpec=20220824, application/json',
  'multipart/mixed, application/json',
  'application/json; callbackSpec=1.0',
  '',
  ';;;, ,',
];

describe('answeredAsWithoutAccept', () => {
  let apollo: ApolloServer;
  beforeAll(async () => {
    apollo = new ApolloServer({ typeDefs: 'type Query { hello: String, boom: String }', resolvers: { Query: { hello: () => 'world', boom: () => { throw new Error('no'); } } } });
    await apollo.start();
  });
  afterAll(() => apollo.stop());

  async function answer(accept: string | undefined, query: string) {
    const headers = new HeaderMap([['content-type', 'application/json']]);
    if (accept !== undefined) headers.set('accept', accept);
    const res = await apollo.executeHTTPGraphQLRequest({ httpGraphQLRequest: { method: 'POST', headers, search: '', body: { query } }, context: async () => ({}) });
    return { status: res.status ?? 200, headers: [...res.headers], body: res.body.kind === 'complete' ? res.body.string : 'chunked' };
  }

  test.each(ACCEPTS)('Accept %j: dropped only where Apollo answers as without it', async (accept) => {
    if (!answeredAsWithoutAccept(accept)) return;
    for (const query of ['{ hello }', '{ boom }', '{ nope }', 'query {']) {
      expect(await answer(accept, query)).toEqual(await answer(undefined, query));
    }
  });

  test('what it drops and what it passes on', () => {
    expect(ACCEPTS.filter(answeredAsWithoutAccept)).toEqual([
      'application/json',
      'application/json, text/event-stream',
      'application/json; charset=utf-8',
      'text/plain, application/json',
      'APPLICATION/JSON',
      'application/*',
    ]);
  });

  test('a header it passes on can change Apollo answer (the check is not vacuous)', async () => {
    expect(await answer('text/html', '{ hello }')).not.toEqual(await answer(undefined, '{ hello }'));
    expect(await answer('application/graphql-response+json', '{ hello }')).not.toEqual(await answer(undefined, '{ hello }'));
  });
});
