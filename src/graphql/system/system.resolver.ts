import { Ctx, Query, Resolver } from 'type-graphql';
import { eventLogStatus } from '../../application/system-reads';
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
    const status = await eventLogStatus(app.ports);
    return { ...status, bus: app.bus.kind };
  }
}
