import { GraphQLJSONObject } from '../json-object';
import { Arg, Ctx, Mutation, Query, Resolver } from 'type-graphql';
import { untilProjected } from '../../application/projected';
import { receivedTaskStatus } from '../../application/receiver-reads';
import type { EndpointMode } from '../../domain/receiver/receiver';
import { AppError } from '../../shared/errors';
import type { GraphQLContext } from '../context';

function requireBuyer(ctx: GraphQLContext) {
  if (!ctx.principal || ctx.principal.role !== 'buyer') throw new AppError('UNAUTHENTICATED', 'a Bearer API key with role buyer is required');
  return ctx.principal;
}

const MODES: readonly EndpointMode[] = ['rfc9421', 'hmac-sha256', 'bearer'];

/** The buyer side of webhooks: where sellers send them, and the latest status they reported (what arrived: receivedWebhooks, graphql/webhooks). */
@Resolver()
export class ReceiverResolver {
  @Mutation(() => GraphQLJSONObject, {
    description:
      'Registers a webhook endpoint for one seller agent (its brand.json domain and agents[].id). mode rfc9421 (default; keys from the seller’s brand.json), hmac-sha256 or bearer (legacy; secret ≥ 32 characters). Returns the URL to put in push_notification_config: replace {task_type}. Buyer key required.',
  })
  async registerWebhookEndpoint(
    @Ctx() ctx: GraphQLContext,
    @Arg('agentId') agentId: string,
    @Arg('senderDomain') senderDomain: string,
    @Arg('mode', () => String, { nullable: true }) mode?: string,
    @Arg('secret', () => String, { nullable: true }) secret?: string,
    @Arg('pinPublisherDomain', () => String, { nullable: true, description: 'Apply the signing_keys[] pin this publisher’s adagents.json sets for the sender agent' }) pinPublisherDomain?: string,
  ) {
    const principal = requireBuyer(ctx);
    const m = (mode ?? 'rfc9421') as EndpointMode;
    if (!MODES.includes(m)) throw new AppError('VALIDATION_ERROR', `mode must be one of ${MODES.join(', ')}`, 'mode');
    const registered = await ctx.app.receiver.registerEndpoint(principal.org, { agentId, senderDomain, mode: m, ...(secret ? { secret } : {}), ...(pinPublisherDomain ? { pinPublisherDomain } : {}) }, { now: new Date().toISOString(), principal: principal.keyId });
    await untilProjected(ctx.app.ports);
    return { ...registered, url_template: `${ctx.origin}${registered.path_template}` };
  }

  @Query(() => GraphQLJSONObject, { nullable: true, description: 'The latest task status senders reported to this buyer (a late, older status never replaces a newer one).' })
  async receivedTaskStatus(@Ctx() ctx: GraphQLContext, @Arg('taskId') taskId: string) {
    const principal = requireBuyer(ctx);
    return (await receivedTaskStatus(ctx.app.ports, principal.org, taskId))[0] ?? null;
  }
}
