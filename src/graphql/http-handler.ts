import { Readable } from 'node:stream';
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
  const q = req.url.indexOf('?');
  return { body: req.body, method: req.method.toUpperCase(), headers, search: q === -1 ? '' : req.url.slice(q) };
}
