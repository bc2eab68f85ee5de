import { GroupCommit, type GroupResult } from '../../../src/eventstore/group-commit';

/** A send whose calls the test answers by hand, recording what each carried. */
function manualSend() {
  const calls: { items: number[]; answer: (r: GroupResult<string>[]) => void; fail: (e: unknown) => void }[] = [];
  const send = (items: number[]) =>
    new Promise<GroupResult<string>[]>((answer, fail) => {
      calls.push({ items, answer, fail });
    });
  return { calls, send };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('GroupCommit', () => {
  it('sends an item alone at once, and groups the items that arrive while the calls are out', async () => {
    const { calls, send } = manualSend();
    const g = new GroupCommit(send, { maxInFlight: 1, maxBatch: 10 });
    const first = g.submit(1);
    const rest = [g.submit(2), g.submit(3), g.submit(4)];
    expect(calls.map((c) => c.items)).toEqual([[1]]);
    calls[0]!.answer([{ ok: 'one' }]);
    expect(await first).toBe('one');
    await tick();
    expect(calls.map((c) => c.items)).toEqual([[1], [2, 3, 4]]);
    calls[1]!.answer([{ ok: 'two' }, { error: new Error('three failed') }, { ok: 'four' }]);
    const settled = await Promise.allSettled(rest);
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message))).toEqual(['two', 'three failed', 'four']);
  });

  it('keeps at most maxInFlight calls out and maxBatch items a call', async () => {
    const { calls, send } = manualSend();
    const g = new GroupCommit(send, { maxInFlight: 2, maxBatch: 3 });
    const all = Array.from({ length: 9 }, (_, i) => g.submit(i));
    expect(calls.map((c) => c.items)).toEqual([[0], [1]]);
    calls[0]!.answer([{ ok: 'a' }]);
    await tick();
    expect(calls.map((c) => c.items)).toEqual([[0], [1], [2, 3, 4]]);
    calls[1]!.answer([{ ok: 'b' }]);
    await tick();
    expect(calls.map((c) => c.items)).toEqual([[0], [1], [2, 3, 4], [5, 6, 7]]);
    calls[2]!.answer([{ ok: 'c' }, { ok: 'd' }, { ok: 'e' }]);
    calls[3]!.answer([{ ok: 'f' }, { ok: 'g' }, { ok: 'h' }]);
    await tick();
    calls[4]!.answer([{ ok: 'i' }]);
    expect(await Promise.all(all)).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i']);
  });

  it('fails every item of a call that fails, and goes on with the next', async () => {
    const { calls, send } = manualSend();
    const g = new GroupCommit(send, { maxInFlight: 1, maxBatch: 10 });
    const first = g.submit(1);
    const grouped = [g.submit(2), g.submit(3)];
    calls[0]!.fail(new Error('connection lost'));
    await expect(first).rejects.toThrow('connection lost');
    await tick();
    calls[1]!.fail(new Error('connection lost again'));
    for (const p of grouped) await expect(p).rejects.toThrow('connection lost again');
    const later = g.submit(4);
    calls[2]!.answer([{ ok: 'fine' }]);
    expect(await later).toBe('fine');
  });

  it('fails an item the call left unanswered instead of leaving it waiting', async () => {
    const { calls, send } = manualSend();
    const g = new GroupCommit(send, { maxInFlight: 1, maxBatch: 10 });
    const p = g.submit(1);
    calls[0]!.answer([]);
    await expect(p).rejects.toThrow(/no answer/);
  });
});
