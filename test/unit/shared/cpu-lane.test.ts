import { CpuLane, LaneRefusal } from '../../../src/shared/cpu-lane';

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

  it('refuses a request at once when its waiting list is full, while the holder still holds the lane', async () => {
    const lane = new CpuLane(2);
    const settled: string[] = [];
    const request = async (who: string) => {
      const ticket = lane.ticket();
      try {
        for (let i = 0; i < 3; i++) {
          await ticket.step();
          busy(2);
        }
        settled.push(`${who} ran`);
      } catch (err) {
        settled.push(`${who} ${err instanceof LaneRefusal ? err.reason : String(err)}`);
      } finally {
        ticket.done();
      }
    };
    await Promise.all(['a', 'b', 'c', 'd', 'e'].map(request));
    // a holds the lane, b and c wait (the cap), d and e are refused before a has finished.
    expect(settled).toEqual(['d full', 'e full', 'a ran', 'b ran', 'c ran']);
    expect(lane.waitingCount).toBe(0);
  });

  it('a request abandoned while it waits leaves the waiting list and never runs a step; one abandoned while it holds the lane runs no further step and hands the lane on', async () => {
    const lane = new CpuLane(10);
    const steps: string[] = [];
    const request = async (who: string, signal: AbortSignal, onStep?: (i: number) => void) => {
      const ticket = lane.ticket(signal);
      try {
        for (let i = 0; i < 3; i++) {
          await ticket.step();
          steps.push(`${who}${i}`);
          onStep?.(i);
          busy(2);
        }
        return 'ran';
      } catch (err) {
        return err instanceof LaneRefusal ? err.reason : String(err);
      } finally {
        ticket.done();
      }
    };
    const holder = new AbortController();
    const waiting = new AbortController();
    const outcomes = Promise.all([
      // The holder is abandoned after its first step (its request answered meanwhile), and the
      // second request while it waits: neither's work goes on.
      request('a', holder.signal, (i) => {
        if (i === 0) {
          holder.abort();
          waiting.abort();
        }
      }),
      request('b', waiting.signal),
      request('c', new AbortController().signal),
    ]);
    expect(lane.waitingCount).toBe(2); // b and c, behind a
    expect(await outcomes).toEqual(['abandoned', 'abandoned', 'ran']);
    expect(steps).toEqual(['a0', 'c0', 'c1', 'c2']);
    // A ticket whose request was abandoned before it asked runs nothing either.
    const gone = new AbortController();
    gone.abort();
    await expect(lane.ticket(gone.signal).step()).rejects.toThrow(LaneRefusal);
  });
});
