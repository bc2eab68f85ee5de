import { Field, Float, Int, ObjectType } from 'type-graphql';
import { GraphQLJSONObject } from '../json-object';

// Every payload carries the log position of the event it reports: a client that reconnects
// passes the last one it received as `after` and misses nothing.

@ObjectType({ description: 'A change to one of your media buys, as it enters the log.' })
export class MediaBuyUpdate {
  @Field(() => Float, { description: 'Log position of the event: pass it as `after` to resume after it.' })
  position!: number;

  @Field()
  mediaBuyId!: string;

  @Field({ description: 'What happened: MediaBuyCreated, MediaBuyApproved, MediaBuyRejected, MediaBuyUpdated or MediaBuyStatusChanged.' })
  event!: string;

  @Field(() => String, { nullable: true, description: 'The buy’s status after the change, when the change sets it (pending, active, paused, completed, canceled, rejected).' })
  status!: string | null;

  @Field(() => String, { nullable: true, description: 'The status before, for a status change.' })
  previousStatus!: string | null;

  @Field(() => [String], { description: 'The terms an update changed (budget, packages, …); empty otherwise.' })
  changed!: string[];

  @Field(() => String, { nullable: true, description: 'The reason or note given with the change.' })
  note!: string | null;

  @Field({ description: 'When it happened (ISO 8601).' })
  at!: string;
}

@ObjectType({ description: 'An asynchronous task submitted or moved to another status.' })
export class TaskStatusChange {
  @Field(() => Float, { description: 'Log position of the event: pass it as `after` to resume after it.' })
  position!: number;

  @Field()
  taskId!: string;

  @Field({ description: 'The task’s type (create_media_buy, sync_creatives, …).' })
  taskType!: string;

  @Field({ description: 'What the task is about: a media buy id, a creative batch, …' })
  resourceId!: string;

  @Field({ description: 'submitted, working, input-required, completed, failed, canceled or rejected.' })
  status!: string;

  @Field(() => String, { nullable: true, description: 'The status before (null when the task was just submitted).' })
  previousStatus!: string | null;

  @Field()
  message!: string;

  @Field()
  at!: string;
}

@ObjectType({ description: 'Delivery recorded, restated or running late for one of your media buys.' })
export class DeliveryUpdate {
  @Field(() => Float, { description: 'Log position of the event: pass it as `after` to resume after it.' })
  position!: number;

  @Field()
  mediaBuyId!: string;

  @Field({ description: 'recorded (new hours), adjusted (an hour restated) or delayed (data running late).' })
  kind!: string;

  @Field(() => Int, { description: 'Hours of package delivery this event records or restates.' })
  hours!: number;

  @Field(() => Float, { description: 'Impressions in those hours (for a restatement: the change).' })
  impressions!: number;

  @Field(() => Float, { description: 'Spend in those hours, in the buy’s currency (for a restatement: the change).' })
  spend!: number;

  @Field(() => String, { nullable: true })
  currency!: string | null;

  @Field(() => String, { nullable: true, description: 'Delivery is recorded through this time, or expected by it when delayed.' })
  through!: string | null;

  @Field(() => String, { nullable: true })
  reason!: string | null;
}

@ObjectType({ description: 'A webhook to one of your endpoints scheduled or attempted by the seller.' })
export class WebhookActivityEvent {
  @Field(() => Float, { description: 'Log position of the event: pass it as `after` to resume after it.' })
  position!: number;

  @Field({ description: 'The notification’s idempotency key (the same on every attempt).' })
  idempotencyKey!: string;

  @Field({ description: 'scheduled or attempted.' })
  kind!: string;

  @Field(() => String, { nullable: true, description: 'task_status, delivery_report or media_buy_status (on scheduled).' })
  notificationType!: string | null;

  @Field(() => String, { nullable: true })
  taskId!: string | null;

  @Field(() => String, { nullable: true })
  mediaBuyId!: string | null;

  @Field(() => Int, { nullable: true, description: 'The attempt’s number (on attempted).' })
  attempt!: number | null;

  @Field(() => String, { nullable: true, description: 'The attempt’s outcome: delivered, retrying, failed… (on attempted).' })
  outcome!: string | null;

  @Field(() => Int, { nullable: true, description: 'The HTTP status the receiver answered.' })
  httpStatus!: number | null;

  @Field(() => String, { nullable: true, description: 'When the next attempt is due, if one is.' })
  nextAttemptAt!: string | null;

  @Field()
  at!: string;
}

@ObjectType({ description: 'A webhook your receiver endpoint accepted (verified, first copy).' })
export class ReceivedWebhookEvent {
  @Field(() => Float, { description: 'Log position of the event: pass it as `after` to resume after it.' })
  position!: number;

  @Field()
  endpointId!: string;

  @Field({ description: 'Who sent it (the signer’s key id or the sender named at registration).' })
  sender!: string;

  @Field({ description: 'mcp or a2a: the envelope it came in.' })
  format!: string;

  @Field()
  receivedAt!: string;
}

@ObjectType({ description: 'An entry of the registry’s change feed (publishers, authorizations, brands, storyboards).' })
export class RegistryFeedEntry {
  @Field(() => Float, { description: 'Log position of the entry: pass it as `after` to resume after it.' })
  position!: number;

  @Field()
  eventId!: string;

  @Field({ description: 'e.g. publisher.verified, brand.updated.' })
  eventType!: string;

  @Field({ description: 'publisher, authorization, brand or storyboards.' })
  entityType!: string;

  @Field()
  entityId!: string;

  @Field()
  actor!: string;

  @Field()
  createdAt!: string;
}

@ObjectType({ description: 'A public event (docs/events.md): the same CloudEvent the Kafka public topics carry, its data as schema/asyncapi.yaml defines it for its type.' })
export class PublicEventMessage {
  @Field(() => Float, { description: 'Log position of the event: pass it as `after` to resume after it.' })
  position!: number;

  @Field({ description: 'CloudEvents `id`: stable across redelivery.' })
  id!: string;

  @Field({ description: 'CloudEvents `type`: the public name and version, e.g. media_buy.status_changed.v1.' })
  type!: string;

  @Field({ description: 'CloudEvents `source`.' })
  source!: string;

  @Field({ description: 'CloudEvents `subject`: the entity, unique across tenants — `<tenant>/<id>` (media buy, task, creative, webhook), or a registry entity (publisher, feed entity) for `shared` events.' })
  subject!: string;

  @Field({ description: 'CloudEvents extension `tenant`: whose event it is — an opaque, stable key of the owning buyer, or `shared` (the registry’s).' })
  tenant!: string;

  @Field({ description: 'CloudEvents `time` (ISO 8601).' })
  time!: string;

  @Field(() => GraphQLJSONObject, { description: 'The payload, valid against the type’s JSON Schema (schema/events/<type>.json).' })
  data!: Record<string, unknown>;
}
