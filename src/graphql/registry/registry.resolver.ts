import { GraphQLJSONObject } from 'graphql-scalars';
import { Arg, Ctx, Int, Query, Resolver } from 'type-graphql';
import { publisherQueries } from '../../../projections/publishers';
import { getStoryboard, readFeed, type Answer } from '../../application/registry-reads';
import { AppError, type ErrorCode } from '../../shared/errors';
import type { GraphQLContext } from '../context';

const CODE: Record<number, ErrorCode> = { 400: 'VALIDATION_ERROR', 404: 'NOT_FOUND', 410: 'INVALID_REQUEST', 500: 'UNAVAILABLE' };

/** A REST answer as GraphQL: the body, or its `{error}` as an error with a code. */
function unwrap(answer: Answer, field?: string): Record<string, unknown> {
  if (answer.status === 200) return answer.body;
  throw new AppError(CODE[answer.status] ?? 'INVALID_REQUEST', String(answer.body.error), field);
}

/** The registry's read side over GraphQL (the same reads as the REST paths). */
@Resolver()
export class RegistryResolver {
  @Query(() => GraphQLJSONObject, { description: 'A compliance storyboard: {adcp_version, requested_compliance_target, storyboard, test_kit?}. Public.' })
  async storyboard(@Ctx() ctx: GraphQLContext, @Arg('id') id: string, @Arg('complianceTarget', () => String, { nullable: true }) complianceTarget?: string) {
    return unwrap(await getStoryboard(ctx.app, id, complianceTarget ?? undefined), 'complianceTarget');
  }

  @Query(() => GraphQLJSONObject, { nullable: true, description: 'A publisher’s last adagents.json verdict, the agents it authorizes and the properties it declares (null: never revalidated). Public.' })
  async publisher(@Ctx() ctx: GraphQLContext, @Arg('domain') domain: string) {
    const p = await publisherQueries.publisher(ctx.app.readModels, domain.trim().toLowerCase());
    if (!p) return null;
    return {
      ...p,
      adagents_valid: Boolean(Number(p.adagents_valid)),
      authorized_agents: await publisherQueries.agents(ctx.app.readModels, p.domain),
      properties: await publisherQueries.properties(ctx.app.readModels, p.domain),
    };
  }

  @Query(() => GraphQLJSONObject, { description: 'A page of the registry change feed ({events, cursor, has_more, freshness}). Any valid key.' })
  async registryFeed(
    @Ctx() ctx: GraphQLContext,
    @Arg('cursor', () => String, { nullable: true }) cursor?: string,
    @Arg('limit', () => Int, { nullable: true }) limit?: number,
    @Arg('types', () => [String], { nullable: true }) types?: string[],
  ) {
    if (!ctx.principal) throw new AppError('UNAUTHENTICATED', 'a Bearer API key is required');
    return unwrap(await readFeed(ctx.app, { ...(cursor ? { cursor } : {}), ...(limit !== undefined && limit !== null ? { limit: String(limit) } : {}), ...(types?.length ? { types: types.join(',') } : {}) }));
  }
}
