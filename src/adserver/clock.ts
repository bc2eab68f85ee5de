import type { EventStore } from '../eventstore/port';

export const CLOCK_STREAM = 'clock';

/**
 * The gateway's clock: real time plus an offset that `advanceClock` moves forward (for demos and
 * tests of delivery). Each advance is an event, so the offset survives a restart.
 */
export class GatewayClock {
  private offsetMs = 0;

  constructor(private store: EventStore) {}

  async load(): Promise<void> {
    this.offsetMs = 0;
    for (const e of await this.store.readStream(CLOCK_STREAM)) this.offsetMs += (e.data as { seconds: number }).seconds * 1000;
  }

  now = (): Date => new Date(Date.now() + this.offsetMs);

  async advance(seconds: number, principal: string): Promise<Date> {
    await this.store.append(CLOCK_STREAM, [{ type: 'ClockAdvanced', data: { seconds }, metadata: { principal } }]);
    this.offsetMs += seconds * 1000;
    return this.now();
  }
}
