import { mediaBuyDecider, type MediaBuyCommand, type MediaBuyEvent, type MediaBuyState, type MediaBuyTerms } from '../../../src/domain/media-buy/media-buy';

/** Issue 35, item 4 (c) and (d): what the seller's approval records about a buy that waited for it. */
const SUBMITTED = '2026-03-02T09:00:00.000Z';
const APPROVED = '2026-03-04T15:30:00.000Z'; // two days later: the IO took its time

const terms = (over: Partial<MediaBuyTerms> = {}): MediaBuyTerms => ({
  media_buy_id: 'mb_1',
  owner: 'acme',
  buyer_ref: 'ref-1',
  brand_manifest: {},
  packages: [{ package_id: 'p1', product_id: 'x', pricing_option_id: 'o', pricing_model: 'cpm', rate: 10, currency: 'USD', budget: 1000, creative_ids: ['c1'] }],
  start_time: SUBMITTED,
  end_time: '2026-03-20T00:00:00.000Z',
  currency: 'USD',
  total_budget: 1000,
  ...over,
});

function run(commands: MediaBuyCommand[]): { state: MediaBuyState; events: MediaBuyEvent[] } {
  let state = mediaBuyDecider.initialState();
  const events: MediaBuyEvent[] = [];
  for (const c of commands) {
    for (const e of mediaBuyDecider.decide(c, state)) {
      events.push(e);
      state = mediaBuyDecider.evolve(state, e);
    }
  }
  return { state, events };
}

const live = (s: MediaBuyState) => s as Exclude<MediaBuyState, { status: 'none' }>;

describe('media buy approval (decider)', () => {
  it('(d) an "asap" buy that waited for approval starts when approved, and says so in an update of its terms', () => {
    const { state, events } = run([
      { type: 'CreateMediaBuy', terms: terms({ start_asap: true }), needsApproval: true, taskId: 't1', now: SUBMITTED },
      { type: 'ApproveMediaBuy', taskId: 't1', now: APPROVED },
    ]);
    expect(live(state).status).toBe('active');
    expect(live(state).terms.start_time).toBe(APPROVED);
    expect(live(state).terms.start_asap).toBe(true);
    expect(events.map((e) => e.type)).toEqual(['MediaBuyCreated', 'MediaBuyApproved', 'MediaBuyUpdated']);
    expect(events[2]!.data).toMatchObject({ changed: ['start_time'], at: APPROVED });
  });

  it('(d) a scheduled start, and a buy recorded without the flag (older events), keep their start on approval', () => {
    for (const t of [terms({ start_time: '2026-03-10T00:00:00.000Z' }), terms()]) {
      const { state, events } = run([
        { type: 'CreateMediaBuy', terms: t, needsApproval: true, now: SUBMITTED },
        { type: 'ApproveMediaBuy', now: APPROVED },
      ]);
      expect(live(state).terms.start_time).toBe(t.start_time);
      expect(events.map((e) => e.type)).toEqual(['MediaBuyCreated', 'MediaBuyApproved']);
    }
  });

  it('(d) an "asap" buy approved after its flight ended keeps its start (no flight that ends before it starts)', () => {
    const { state } = run([
      { type: 'CreateMediaBuy', terms: terms({ start_asap: true }), needsApproval: true, now: SUBMITTED },
      { type: 'ApproveMediaBuy', now: '2026-03-21T00:00:00.000Z' },
    ]);
    expect(live(state).terms.start_time).toBe(SUBMITTED);
  });

  it('(c) a buy is confirmed when created if confirmed at once, else when approved', () => {
    expect(live(run([{ type: 'CreateMediaBuy', terms: terms(), needsApproval: false, now: SUBMITTED }]).state).confirmedAt).toBe(SUBMITTED);
    const waiting = run([{ type: 'CreateMediaBuy', terms: terms(), needsApproval: true, now: SUBMITTED }]).state;
    expect(live(waiting).confirmedAt).toBeUndefined();
    const approved = run([
      { type: 'CreateMediaBuy', terms: terms(), needsApproval: true, now: SUBMITTED },
      { type: 'ApproveMediaBuy', now: APPROVED },
    ]).state;
    expect(live(approved).confirmedAt).toBe(APPROVED);
  });
});
