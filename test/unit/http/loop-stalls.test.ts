import { Histogram, Registry } from 'prom-client';
import { LoopStalls } from '../../../src/http/loop-stalls';

describe('event-loop stalls', () => {
  it('reports a block of the loop past the threshold, naming what the loop last started, and counts it in /metrics', async () => {
    const registry = new Registry();
    const histogram = new Histogram({ name: 'adcp_event_loop_stall_seconds', help: 'stalls', buckets: [0.1, 1], registers: [registry] });
    const warnings: { fields: Record<string, unknown>; message: string }[] = [];
    const stalls = new LoopStalls({ warn: ((fields: Record<string, unknown>, message: string) => warnings.push({ fields, message })) as never }, histogram);
    stalls.start();
    try {
      // Quiet turns of the loop are not stalls.
      await new Promise((r) => setTimeout(r, 60));
      expect(warnings).toEqual([]);
      stalls.running(() => 'POST /graphql operation "Heavy" (request r1)');
      const until = performance.now() + 250;
      while (performance.now() < until); // the synchronous work a guard failed to stop
      const deadline = Date.now() + 2_000;
      while (warnings.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.fields).toMatchObject({ operation: 'POST /graphql operation "Heavy" (request r1)' });
      expect(warnings[0]!.fields.blockedMs).toBeGreaterThanOrEqual(150);
      expect(warnings[0]!.message).toMatch(/^the event loop was blocked for \d+ ms$/);
      expect(await registry.metrics()).toMatch(/adcp_event_loop_stall_seconds_count 1\n/);
    } finally {
      stalls.stop();
    }
  });
});
