import { GraphQLJSONObject } from '../json-object';
import { Field, Int, ObjectType } from 'type-graphql';

@ObjectType({ description: 'One attempt to deliver a webhook.' })
export class WebhookAttempt {
  @Field(() => Int, { description: '1 for the first attempt.' })
  attempt!: number;

  @Field({ description: 'pending (due at startedAt), success, failed, timeout or connection_error.' })
  outcome!: string;

  @Field(() => Int, { nullable: true, description: 'The receiver’s HTTP status, when it answered.' })
  httpStatus!: number | null;

  @Field(() => String, { nullable: true })
  errorMessage!: string | null;

  @Field({ description: 'When it started, or for a pending attempt when it is due.' })
  startedAt!: string;

  @Field(() => String, { nullable: true })
  completedAt!: string | null;

  @Field(() => Int, { nullable: true, description: 'How long the receiver took, in milliseconds.' })
  durationMs!: number | null;
}

@ObjectType({ description: 'A webhook the seller sends about a media buy (its task’s status, delivery reports, …) and how its delivery went.' })
export class WebhookActivity {
  @Field({ description: 'The notification’s idempotency key (the same on every attempt).' })
  idempotencyKey!: string;

  @Field({ description: 'task_status, or the media buy notification’s type (scheduled, final, delayed, adjusted, impairment, …).' })
  notificationType!: string;

  @Field(() => String, { nullable: true })
  taskId!: string | null;

  @Field({ description: 'Where it goes (without query or fragment, which often carry tokens).' })
  url!: string;

  @Field({ description: 'scheduled (first attempt due), retrying, delivered or gave_up.' })
  state!: string;

  @Field(() => Int)
  payloadBytes!: number;

  @Field(() => Int, { nullable: true, description: 'A delivery report’s sequence number.' })
  sequenceNumber!: number | null;

  @Field(() => [WebhookAttempt], { description: 'Its attempts, first first (the last one pending while a retry waits).' })
  attempts!: WebhookAttempt[];
}

@ObjectType({ description: 'A webhook your receiver accepted (verified, deduplicated).' })
export class ReceivedWebhook {
  @Field({ description: 'Its dedup scope (the endpoint, or the verified signing key) and key: unique per webhook.' })
  id!: string;

  @Field({ description: 'The endpoint it came to (registerWebhookEndpoint).' })
  endpointId!: string;

  @Field({ description: 'The sending agent.' })
  sender!: string;

  @Field(() => String, { nullable: true })
  taskId!: string | null;

  @Field(() => String, { nullable: true })
  taskType!: string | null;

  @Field(() => String, { nullable: true, description: 'The task status it reported.' })
  status!: string | null;

  @Field(() => String, { nullable: true })
  notificationType!: string | null;

  @Field({ description: 'When the sender says it sent it.' })
  sentAt!: string;

  @Field()
  receivedAt!: string;

  @Field(() => GraphQLJSONObject, { nullable: true, description: 'The data it carried (a task’s result, a notification), in the sender’s AdCP shape: open-ended, so JSON.' })
  data!: Record<string, unknown> | null;
}

@ObjectType({ description: 'Part of a media buy went offline upstream (a property depublished, a seller removed).' })
export class Impairment {
  @Field()
  id!: string;

  @Field({ description: 'property_depublished or seller_removed.' })
  reasonCode!: string;

  @Field()
  reason!: string;

  @Field({ description: 'The resource that went offline (a property’s domain).' })
  resourceId!: string;

  @Field(() => [String])
  packageIds!: string[];

  @Field()
  observedAt!: string;

  @Field(() => String, { nullable: true, description: 'When it came back (null: still open).' })
  resolvedAt!: string | null;

  @Field(() => String, { nullable: true })
  remediation!: string | null;
}

