import 'reflect-metadata';
import { lexicographicSortSchema, printSchema, type GraphQLSchema } from 'graphql';
import { buildSchema } from 'type-graphql';
import { ApiKeyResolver } from './api-keys/api-key.resolver';
import { CatalogResolver } from './catalog/catalog.resolver';
import { GovernanceResolver } from './governance/governance.resolver';
import { MediaBuyResolver } from './media-buys/media-buy.resolver';
import { ReceiverResolver } from './receiver/receiver.resolver';
import { BrandResolver } from './registry/brands.resolver';
import { RegistryResolver } from './registry/registry.resolver';
import { SystemResolver } from './system/system.resolver';
import { DeliveryResolver } from './delivery/delivery.resolver';
import { LiveResolver } from './live/live.resolver';
import { BuyResolver, TaskResolver } from './buys/buy.resolver';
import { BuyActionsResolver } from './buys/buy-actions.resolver';
import { BuyCreativesResolver, CreativeResolver } from './creatives/creative.resolver';
import { BuyWebhooksResolver, ReceivedWebhookResolver } from './webhooks/webhook.resolver';

let cached: Promise<GraphQLSchema> | undefined;

/**
 * type-graphql asks for a PubSub once a schema has subscriptions, though every one of ours brings
 * its own `subscribe` (they follow the live log, graphql/live): this one is never used.
 */
const noPubSub = {
  publish(): void {
    throw new Error('subscriptions follow the live log; nothing is published');
  },
  subscribe(): AsyncIterable<unknown> {
    throw new Error('subscriptions follow the live log; every one brings its own subscribe');
  },
};

/** The gateway's schema, built once per process from the type-graphql resolvers. */
export function gatewaySchema(): Promise<GraphQLSchema> {
  cached ??= buildSchema({ resolvers: [SystemResolver, ApiKeyResolver, CatalogResolver, MediaBuyResolver, GovernanceResolver, ReceiverResolver, BrandResolver, RegistryResolver, LiveResolver, BuyResolver, TaskResolver, DeliveryResolver, BuyActionsResolver, CreativeResolver, BuyCreativesResolver, BuyWebhooksResolver, ReceivedWebhookResolver], validate: false, pubSub: noPubSub });
  return cached;
}

/** The committed SDL (schema/schema.graphql): sorted so diffs show only real changes. */
export async function printGatewaySchema(): Promise<string> {
  return printSchema(lexicographicSortSchema(await gatewaySchema())) + '\n';
}
