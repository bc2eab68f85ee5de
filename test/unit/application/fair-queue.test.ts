import { FairQueue } from '../../../src/application/fair-queue';

describe('FairQueue', () => {
  const drain = (q: FairQueue<string>) => {
    const out: string[] = [];
    for (let next = q.take(); next; next = q.take()) out.push(next.item);
    return out;
  };

  it('hands items out round-robin between requesters, each in its own order', () => {
    const q = new FairQueue<string>({ share: 10, max: 100 });
    q.offer('a', ['a1', 'a2', 'a3', 'a4']);
    q.offer('b', ['b1']);
    q.offer('c', ['c1', 'c2']);
    expect(drain(q)).toEqual(['a1', 'b1', 'c1', 'a2', 'c2', 'a3', 'a4']);
    expect(q.waiting).toBe(0);
  });

  it('a requester arriving behind a long backlog is next but one', () => {
    const q = new FairQueue<string>({ share: 1000, max: 1000 });
    q.offer('hostile', Array.from({ length: 100 }, (_, i) => `h${i}`));
    expect(q.take()!.item).toBe('h0');
    q.offer('late', ['l1']);
    expect([q.take()!.item, q.take()!.item]).toEqual(['h1', 'l1']);
  });

  it('refuses an offer whole past the requester’s share (running items count) or past the total, queuing none of it', () => {
    const q = new FairQueue<string>({ share: 3, max: 5 });
    expect(q.offer('a', ['a1', 'a2'])).toBeUndefined();
    const taken = q.take()!;
    expect(q.offer('a', ['a3', 'a4'])).toBe('share');
    expect(q.pendingOf('a')).toBe(2);
    q.done(taken.requester);
    expect(q.offer('a', ['a3', 'a4'])).toBeUndefined();
    expect(q.offer('b', ['b1', 'b2', 'b3'])).toBe('full');
    expect(q.offer('b', ['b1', 'b2'])).toBeUndefined();
    expect(q.waiting).toBe(5);
    expect(drain(q)).toEqual(['a2', 'b1', 'a3', 'b2', 'a4']);
  });

  it('clear drops what waits; running items still finish', () => {
    const q = new FairQueue<string>({ share: 3, max: 5 });
    q.offer('a', ['a1', 'a2']);
    const running = q.take()!;
    q.clear();
    expect({ waiting: q.waiting, next: q.take(), pending: q.pendingOf('a') }).toEqual({ waiting: 0, next: undefined, pending: 1 });
    q.done(running.requester);
    expect(q.pendingOf('a')).toBe(0);
  });
});
