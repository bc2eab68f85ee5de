import { Ctx, Query, Resolver } from 'type-graphql';
import { eventStatsQueries, type EventTypeStat } from '../../../projections/event-stats';
import type { GraphQLContext } from '../context';
import { EventLogStatus } from './system.type';

@Resolver()
export class SystemResolver {
  @Query(() => String, { description: 'The gateway’s clock (ISO 8601): flights, pacing and delivery run on it, and a demo may have moved it forward (advanceClock).' })
  clock(@Ctx() { app }: GraphQLContext): string {
    return app.clock().toISOString();
  }

  @Query(() => EventLogStatus, { description: 'Log head, per-projection lag and event counts by type.' })
  async eventLog(@Ctx() { app }: GraphQLContext): Promise<EventLogStatus> {
    const head = await app.store.headPosition();
    const eventTypes = await app.readModels.query<EventTypeStat>(eventStatsQueries.sql);
    return {
      store: app.store.kind,
      bus: app.bus.kind,
      headPosition: head,
      projections: app.projections.status().map((p) => ({ ...p, lag: Math.max(0, head - p.position) })),
      eventTypes: eventTypes.map((t) => ({ ...t, count: Number(t.count), lastPosition: Number(t.lastPosition) })),
    };
  }
}
