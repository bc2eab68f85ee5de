import { CpuLane } from '../../../src/shared/cpu-lane';

/** Holds the CPU for `ms`, as a large body's JSON checks do. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('CpuLane', () => {
  it('runs the steps of concurrent requests one at a time, a turn of the event loop between any two, resting as long as each step took', async () => {
    const lane = new CpuLane();
    const log: { who: string; start: number; end: number; probeRanBefore: boolean }[] = [];
    let probeRan = true;
    const request = async (who: string, steps: number) => {
      const ticket = lane.ticket();
      try {
        for (let i = 0; i < steps; i++) {
          await ticket.step();
          const start = performance.now();
          const probeRanBefore = probeRan;
          busy(5);
          // What waits on the loop meanwhile (a /healthz): it must run before any next step.
          probeRan = false;
          setImmediate(() => (probeRan = true));
          log.push({ who, start, end: performance.now(), probeRanBefore });
        }
      } finally {
        ticket.done();
      }
    };
    await Promise.all([request('a', 3), request('b', 2), request('c', 0), request('d', 3)]);
    expect(log.map((s) => s.who).join('')).toBe('aaabbddd');
    expect(log.every((s) => s.probeRanBefore)).toBe(true);
    for (let i = 1; i < log.length; i++) {
      // The gap before a step is at least about the previous step's length (timers round to 1 ms).
      expect(log[i]!.start - log[i - 1]!.end).toBeGreaterThanOrEqual((log[i - 1]!.end - log[i - 1]!.start) * 0.8 - 1);
    }
  });

  it('a ticket that took no step hands nothing on, and the lane is free afterwards', async () => {
    const lane = new CpuLane();
    lane.ticket().done();
    const ticket = lane.ticket();
    await ticket.step();
    ticket.done();
    const next = lane.ticket();
    await next.step();
    next.done();
  });
});
