import { Field, Float, Int, ObjectType } from 'type-graphql';

@ObjectType({ description: 'How far one projection has applied the event log.' })
export class ProjectionLag {
  @Field()
  name!: string;

  @Field(() => Float, { description: 'Global position applied so far.' })
  position!: number;

  @Field(() => Float, { description: 'Log head minus position (0 when caught up).' })
  lag!: number;
}

@ObjectType({ description: 'Events of one type in the log, from the event-stats read model.' })
export class EventTypeCount {
  @Field()
  type!: string;

  @Field(() => Int)
  count!: number;

  @Field(() => Float)
  lastPosition!: number;

  @Field()
  lastAt!: string;
}

@ObjectType({ description: 'The event log as the read side sees it.' })
export class EventLogStatus {
  @Field({ description: 'sqlite, postgres, kurrentdb or memory.' })
  store!: string;

  @Field({ description: 'embedded or kafka.' })
  bus!: string;

  @Field(() => Float, { description: 'Highest position readers can see.' })
  headPosition!: number;

  @Field(() => [ProjectionLag])
  projections!: ProjectionLag[];

  @Field(() => [EventTypeCount])
  eventTypes!: EventTypeCount[];
}
