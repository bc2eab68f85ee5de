import { Field, Float, ID, Int, ObjectType, registerEnumType } from 'type-graphql';

export enum DeliveryGranularity {
  HOURLY = 'hourly',
  DAILY = 'daily',
}
registerEnumType(DeliveryGranularity, { name: 'DeliveryGranularity', description: 'The buckets of a delivery series: UTC hours or UTC days.' });

@ObjectType({ description: 'One package of a media buy: a product bought at one of its pricing options.' })
export class Package {
  @Field(() => ID)
  id!: string;

  @Field(() => String, { nullable: true, description: 'The buyer’s own reference for the package.' })
  buyerRef!: string | null;

  @Field()
  productId!: string;

  @Field()
  pricingOptionId!: string;

  @Field(() => Float, { description: 'Budget in the buy’s currency.' })
  budget!: number;

  @Field(() => Float, { nullable: true, description: 'The bid, for an auction-priced package.' })
  bidPrice!: number | null;

  @Field(() => [String], { description: 'Creatives assigned to the package.' })
  creativeIds!: string[];

  @Field()
  paused!: boolean;

  @Field()
  canceled!: boolean;
}

@ObjectType({ description: 'One status a task went through.' })
export class TaskHistoryEntry {
  @Field()
  status!: string;

  @Field()
  message!: string;

  @Field()
  at!: string;
}

@ObjectType({ description: 'An asynchronous task: work that waits for the seller (an approval, creatives to review).' })
export class Task {
  @Field(() => ID)
  id!: string;

  @Field({ description: 'create_media_buy, update_media_buy, sync_creatives, …' })
  type!: string;

  @Field({ description: 'submitted, working, input-required, completed, failed, canceled or rejected.' })
  status!: string;

  @Field()
  message!: string;

  @Field({ description: 'What the task is about (a media buy id, …).' })
  resourceId!: string;

  @Field()
  createdAt!: string;

  @Field()
  updatedAt!: string;

  @Field(() => [TaskHistoryEntry], { description: 'Every status, oldest first.' })
  history!: TaskHistoryEntry[];

  /** resourceId as stored (a buyer-chosen sandbox id carries its owner's tag). */
  internalResourceId!: string;
}

@ObjectType({ description: 'Delivery metrics: what was served and what it cost.' })
export class DeliveryMetrics {
  @Field(() => Float)
  impressions!: number;

  @Field(() => Float)
  clicks!: number;

  @Field(() => Float, { description: 'In the buy’s currency.' })
  spend!: number;
}

@ObjectType({ description: 'One package’s delivery over the range.' })
export class PackageDelivery extends DeliveryMetrics {
  @Field(() => ID)
  packageId!: string;
}

@ObjectType({ description: 'Delivery in one bucket of the series (an hour or a day).' })
export class DeliveryPoint extends DeliveryMetrics {
  @Field({ description: 'Start of the bucket (UTC, ISO 8601).' })
  start!: string;
}

@ObjectType({ description: 'A media buy’s delivery over a range: totals, per package, and a series.' })
export class Delivery {
  @Field()
  currency!: string;

  @Field(() => DeliveryGranularity)
  granularity!: DeliveryGranularity;

  @Field(() => DeliveryMetrics)
  totals!: DeliveryMetrics;

  @Field(() => [PackageDelivery])
  byPackage!: PackageDelivery[];

  @Field(() => [DeliveryPoint], { description: 'Buckets with delivery, oldest first.' })
  series!: DeliveryPoint[];
}

@ObjectType({ description: 'One change in a media buy’s history, from its events.' })
export class TimelineEntry {
  @Field(() => Float, { description: 'The event’s log position.' })
  position!: number;

  @Field({ description: 'MediaBuyCreated, MediaBuyApproved, MediaBuyRejected, MediaBuyUpdated or MediaBuyStatusChanged.' })
  event!: string;

  @Field(() => String, { nullable: true, description: 'The status after the change, when it set one.' })
  status!: string | null;

  @Field(() => [String], { description: 'The terms an update changed.' })
  changed!: string[];

  @Field(() => String, { nullable: true })
  note!: string | null;

  @Field()
  at!: string;
}

@ObjectType({ description: 'A media buy: packages bought from the seller’s products for a flight and a budget.' })
export class MediaBuy {
  @Field(() => ID)
  id!: string;

  @Field()
  buyerRef!: string;

  @Field({ description: 'pending, active, paused, completed, canceled or rejected.' })
  status!: string;

  @Field()
  currency!: string;

  @Field(() => Float)
  totalBudget!: number;

  @Field()
  startTime!: string;

  @Field()
  endTime!: string;

  @Field()
  createdAt!: string;

  @Field()
  updatedAt!: string;

  @Field(() => Int, { description: 'Increases with every change.' })
  revision!: number;

  @Field(() => [Package])
  packages!: Package[];

  /** The task that created it, when it waited for the seller (resolved on demand). */
  taskId!: string | null;

  /** Its id as stored (a buyer-chosen sandbox id carries its owner's tag). */
  internalId!: string;

  /** The buyer who owns it (its creatives and webhooks are theirs). */
  owner!: string;
}

@ObjectType()
export class PageInfo {
  @Field()
  hasNextPage!: boolean;

  @Field(() => String, { nullable: true, description: 'Pass as `after` for the next page.' })
  endCursor!: string | null;
}

@ObjectType()
export class MediaBuyEdge {
  @Field()
  cursor!: string;

  @Field(() => MediaBuy)
  node!: MediaBuy;
}

@ObjectType({ description: 'A page of media buys (a cursor connection).' })
export class MediaBuyConnection {
  @Field(() => [MediaBuyEdge])
  edges!: MediaBuyEdge[];

  @Field(() => PageInfo)
  pageInfo!: PageInfo;
}
