import type { Projection } from '../src/projections/projection';
import { accounts } from './accounts';
import { apiKeys } from './api-keys';
import { catalog } from './catalog';
import { creatives } from './creatives';
import { delivery } from './delivery';
import { mediaBuys } from './media-buys';
import { eventStats } from './event-stats';
import { webhooks } from './webhooks';
import { impairments } from './impairments';
import { receivedWebhooks } from './received-webhooks';
import { storyboards } from './storyboards';
import { brands } from './brands';
import { publishers } from './publishers';
import { feed } from './feed';
import { sandboxCatalog } from './sandbox-catalog';
import { previews } from './previews';
import { audiences } from './audiences';
import { buyerCatalogs } from './buyer-catalogs';
import { eventSources } from './event-sources';
import { governancePlans } from './governance-plans';
import { oauthRevokedGrants } from './oauth-grants';

/** Every read model the gateway maintains. */
export const allProjections: readonly Projection[] = [eventStats, apiKeys, accounts, catalog, mediaBuys, creatives, delivery, webhooks, impairments, receivedWebhooks, storyboards, brands, publishers, feed, sandboxCatalog, previews, audiences, buyerCatalogs, eventSources, governancePlans, oauthRevokedGrants];
