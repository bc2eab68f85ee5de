import { Readable } from 'node:stream';
import Negotiator from 'negotiator';
import { HeaderMap, type ApolloServer, type BaseContext, type HTTPGraphQLRequest } from '@apollo/server';
import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';

/**
 * The /graphql route: Apollo's answer to the request, with `finish` given the chance to add to a
 * complete answer (the cost limits add the operation's price) before it is sent. What
 * `@as-integrations/fastify`'s handler does, plus that step, and without building a URL object per
 * request to find its query string.
 */
export function graphqlRouteHandler<Context extends BaseContext>(
  apollo: ApolloServer<Context>,
  context: (req: FastifyRequest, reply: FastifyReply) => Promise<Context>,
  finish?: (req: FastifyRequest, reply: FastifyReply, body: string) => string | Promise<string>,
): RouteHandlerMethod {
  apollo.assertStarted('graphqlRouteHandler()');
  return async (req, reply) => {
    const answer = await apollo.executeHTTPGraphQLRequest({ httpGraphQLRequest: apolloRequestOf(req), context: () => context(req, reply) });
    for (const [name, value] of answer.headers) void reply.header(name, value);
    void reply.code(answer.status ?? 200);
    if (answer.body.kind === 'complete') return finish ? finish(req, reply, answer.body.string) : answer.body.string;
    return reply.send(Readable.from(answer.body.asyncIterator));
  };
}

function apolloRequestOf(req: FastifyRequest): HTTPGraphQLRequest {
  const headers = new HeaderMap();
  for (const name in req.headers) {
    const value = req.headers[name];
    if (value) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const accept = headers.get('accept');
  if (accept !== undefined && answeredAsWithoutAccept(accept)) headers.delete('accept');
  const q = req.url.indexOf('?');
  return { body: req.body, method: req.method.toUpperCase(), headers, search: q === -1 ? '' : req.url.slice(q) };
}

// The media types Apollo Server 4 negotiates with `negotiator`, as its own code lists them and
// in its order (its MEDIA_TYPES, which the package does not export).
const APPLICATION_JSON = 'application/json; charset=utf-8';
const SINGLE_RESULT_TYPES = [APPLICATION_JSON, 'application/graphql-response+json; charset=utf-8', 'application/json; callbackSpec=1.0; charset=utf-8'];
const MULTIPART_TYPES = ['multipart/mixed', 'multipart/mixed; incrementalSpec=v0.2', 'multipart/mixed; deferSpec=20220824'];
const acceptVerdicts = new Map<string, boolean>();

/**
 * Whether Apollo answers a request with this Accept header exactly as it answers one with none:
 * it would choose `application/json` for a single result and accepts no multipart type (so it
 * refuses incremental delivery as it does without the header). Apollo runs `negotiator` over the
 * header twice for every request (5 % of a GraphQL read here); the verdict depends on the
 * header's text alone, so it is worked out once per distinct value (clients send one or two) and
 * such a header is not passed on. Any other Accept reaches Apollo as sent. A test holds this to
 * Apollo's own answers.
 */
export function answeredAsWithoutAccept(accept: string): boolean {
  let verdict = acceptVerdicts.get(accept);
  if (verdict === undefined) {
    const negotiator = new Negotiator({ headers: { accept } });
    verdict = negotiator.mediaType(SINGLE_RESULT_TYPES) === APPLICATION_JSON && negotiator.mediaType(MULTIPART_TYPES) === undefined;
    if (acceptVerdicts.size >= 256) acceptVerdicts.clear(); // bounded: a client may send any text
    acceptVerdicts.set(accept, verdict);
  }
  return verdict;
}
