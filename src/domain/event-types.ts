import type { AccountEvent } from './account/account';
import type { PublisherEvent } from './adagents/events';
import type { ApiKeyEvent } from './api-key/api-key';
import type { AudienceEvent } from './audience/audience';
import type { BrandEvent } from './brands/events';
import type { BuyerCatalogEvent } from './buyer-catalog/buyer-catalog';
import type { CatalogEvent } from './catalog/catalog';
import type { CreativeEvent } from './creative/creative';
import type { DeliveryEvent } from './delivery/delivery';
import type { EventSourceEvent } from './event-source/event-source';
import type { FeedEvent } from './feed/events';
import type { PlanEvent } from './governance/plan';
import type { ImpairmentEvent } from './impairment/impairment';
import type { MediaBuyEvent } from './media-buy/media-buy';
import type { GrantEvent, OAuthClientEvent, OAuthFamilyEvent } from './oauth/grants';
import type { ProposalEvent } from './proposal/proposal';
import type { EndpointEvent, ReceivedEvent } from './receiver/receiver';
import type { ReportLogEvent } from './reporting/report-log';
import type { StoryboardEvent } from './storyboards/events';
import type { TaskEvent } from './task/task';
import type { WebhookEvent } from './webhook/webhook';

/** Every event a decider of the domain emits. */
type DomainEvent =
  | AccountEvent
  | PublisherEvent
  | ApiKeyEvent
  | AudienceEvent
  | BrandEvent
  | BuyerCatalogEvent
  | CatalogEvent
  | CreativeEvent
  | DeliveryEvent
  | EventSourceEvent
  | FeedEvent
  | PlanEvent
  | ImpairmentEvent
  | MediaBuyEvent
  | GrantEvent
  | OAuthClientEvent
  | OAuthFamilyEvent
  | ProposalEvent
  | EndpointEvent
  | ReceivedEvent
  | ReportLogEvent
  | StoryboardEvent
  | TaskEvent
  | WebhookEvent;

/**
 * The domain's event types. Typed over the whole union: a new event type fails to compile until it
 * is listed here (and a type that no longer exists, too).
 */
const DOMAIN_TYPES: { readonly [T in DomainEvent['type']]: true } = {
  AccountSynced: true,
  AccountStatusChanged: true,
  AdagentsRevalidated: true,
  ApiKeyIssued: true,
  ApiKeyRevoked: true,
  AudienceSynced: true,
  AudienceDeleted: true,
  BrandRegistered: true,
  BrandCrawled: true,
  BuyerCatalogSynced: true,
  BuyerCatalogDeleted: true,
  CatalogPublished: true,
  CreativeSynced: true,
  CreativeStatusChanged: true,
  CreativeArchived: true,
  DeliveryRecorded: true,
  DeliveryAdjusted: true,
  DeliveryDelayed: true,
  EventSourceSynced: true,
  EventSourceDeleted: true,
  ConversionsLogged: true,
  FeedEntryRecorded: true,
  PlanSynced: true,
  GovernanceChecked: true,
  ImpairmentOpened: true,
  ImpairmentResolved: true,
  MediaBuyCreated: true,
  MediaBuyApproved: true,
  MediaBuyRejected: true,
  MediaBuyStatusChanged: true,
  MediaBuyUpdated: true,
  OAuthGrantIssued: true,
  OAuthGrantUsed: true,
  OAuthClientRegistered: true,
  OAuthTokenFamilyRevoked: true,
  ProposalFinalized: true,
  ProposalRefined: true,
  WebhookEndpointRegistered: true,
  WebhookReceived: true,
  DeliveryReportScheduled: true,
  DeliveryReportSequenced: true,
  StoryboardImported: true,
  TestKitImported: true,
  TaskSubmitted: true,
  TaskStatusChanged: true,
  WebhookScheduled: true,
  WebhookAttempted: true,
  EscalationResolved: true,
  PlanOutcomeReported: true,
  StoryboardBundleFailed: true,
  StoryboardBundleImported: true,
  GovernanceAgentsSynced: true,
};

/**
 * Types the application and the adapters append themselves, outside any decider's union (search
 * for `append(` with a literal type): keep this list in step with them, or `log import` and
 * `log copy` refuse a log holding one (test/unit/event-types.test.ts checks the projections' and
 * the public mapping's types against this registry).
 */
const APPENDED_OUTSIDE_DECIDERS = [
  'ProjectionsRebuilt', // src/cli.ts, `projections rebuild`
  'ClockAdvanced', // src/adserver/clock.ts
  'IdempotentResponseRecorded', // src/application/idempotency.ts
  'SandboxProductSeeded', // src/application/sandbox/seeds.ts
  'SandboxFormatSeeded',
  'SandboxUpstreamForcedUnavailable', // src/application/sandbox/upstreams.ts
  'CreativePreviewRendered', // src/application/tasks/preview-tasks.ts
  'GovernanceDeliveryCheckClaimed', // consumers/governance-monitor
  'GovernanceDeliveryChecked',
  'GovernanceDeliveryCheckFailed',
  'PerformanceFeedbackProvided', // src/application/tasks/financial-tasks.ts
] as const;

const KNOWN: ReadonlySet<string> = new Set([...Object.keys(DOMAIN_TYPES), ...APPENDED_OUTSIDE_DECIDERS]);

/**
 * Whether `type` is an event type this gateway writes: `log import` and `log copy` refuse any
 * other (nothing would read it, and a typo'd type is a sign of a hand-edited or foreign log).
 */
export function isKnownEventType(type: string): boolean {
  return KNOWN.has(type);
}

/** Every event type the gateway writes, sorted (for tests and docs). */
export const KNOWN_EVENT_TYPES: readonly string[] = [...KNOWN].sort();
