import { HOUR_MS, planHour, type PackagePlan } from '../../src/domain/delivery/delivery';
import { mediaBuyDecider, type MediaBuyCommand, type MediaBuyEvent, type MediaBuyTerms, type PackageTerms } from '../../src/domain/media-buy/media-buy';
import { AppError } from '../../src/shared/errors';

const pkg = (over: Partial<PackageTerms> = {}): PackageTerms => ({
  package_id: 'p1', product_id: 'x', pricing_option_id: 'o', pricing_model: 'cpm', rate: 10, currency: 'USD', budget: 1000, creative_ids: [], ...over,
});

/** Runs the pacing over every hour of a flight and returns the totals. */
function fly(plan: PackagePlan, hours: number, runHours = hours) {
  const start = Date.UTC(2026, 0, 1);
  let spend = 0;
  let clicks = 0;
  let impressions = 0;
  for (let h = 0; h < runHours; h++) {
    const d = planHour(plan, { start, end: start + hours * HOUR_MS }, start + h * HOUR_MS, spend, clicks, impressions);
    expect(d.spend_cents).toBeGreaterThanOrEqual(0);
    spend += d.spend_cents;
    clicks += d.clicks;
    impressions += d.impressions;
  }
  return { spend, clicks, impressions };
}

describe('delivery pacing (planHour)', () => {
  it('spends a CPM budget evenly and never past it, even when run past the flight', () => {
    const plan = { pkg: pkg(), dailyCapacity: 10_000_000, ctr: 0.01 };
    const half = fly(plan, 48, 24);
    expect(half.spend).toBeGreaterThan(49_000);
    expect(half.spend).toBeLessThanOrEqual(50_100);
    const all = fly(plan, 48, 60);
    expect(all.spend).toBeLessThanOrEqual(100_000);
    expect(all.spend).toBeGreaterThan(99_000);
    expect(all.impressions).toBe(Math.floor(all.impressions));
    expect(all.clicks).toBe(Math.floor(all.impressions * 0.01));
  });

  it('is held back by the product capacity', () => {
    const r = fly({ pkg: pkg({ budget: 1_000_000 }), dailyCapacity: 24_000, ctr: 0 }, 24);
    expect(r.impressions).toBe(24_000);
    expect(r.spend).toBe(24_000);
  });

  it('accrues a flat fee over the flight, capped by the budget', () => {
    expect(fly({ pkg: pkg({ pricing_model: 'flat-fee', rate: 5000, budget: 8000 }), dailyCapacity: 2400, ctr: 0 }, 10).spend).toBe(500_000);
    expect(fly({ pkg: pkg({ pricing_model: 'flat-fee', rate: 5000, budget: 1000 }), dailyCapacity: 2400, ctr: 0 }, 10).spend).toBe(100_000);
  });
});

const now = '2026-11-23T10:00:00.000Z';
const terms: MediaBuyTerms = {
  media_buy_id: 'mb_1', owner: 'acme', buyer_ref: 'r', brand_manifest: { url: 'https://acme.example' }, packages: [pkg(), pkg({ package_id: 'p2', budget: 3000 })],
  start_time: now, end_time: '2026-12-23T10:00:00.000Z', currency: 'USD', total_budget: 4000,
};
const created: MediaBuyEvent = { type: 'MediaBuyCreated', data: { ...terms, status: 'active', at: now } };

function decide(history: MediaBuyEvent[], command: MediaBuyCommand) {
  return mediaBuyDecider.decide(command, history.reduce(mediaBuyDecider.evolve, mediaBuyDecider.initialState()));
}
function error(history: MediaBuyEvent[], command: MediaBuyCommand): AppError {
  try {
    decide(history, command);
  } catch (err) {
    return err as AppError;
  }
  throw new Error('expected an error');
}

describe('media buy decider', () => {
  const update = (changes: object, status?: 'pause' | 'resume' | 'cancel'): MediaBuyCommand => ({ type: 'UpdateMediaBuy', changes, status, now });

  it('pauses, resumes and cancels; illegal transitions name the current status', () => {
    const paused = decide([created], update({}, 'pause'));
    expect(paused).toEqual([{ type: 'MediaBuyStatusChanged', data: { media_buy_id: 'mb_1', from: 'active', status: 'paused', at: now } }]);
    expect(error([created, ...paused], update({}, 'pause'))).toMatchObject({ code: 'INVALID_STATE', field: 'updates.status', details: { current_status: 'paused' } });
    const canceled = decide([created], update({}, 'cancel'));
    expect(error([created, ...canceled], update({}, 'resume'))).toMatchObject({ code: 'INVALID_STATE', message: 'cannot update a media buy that is canceled' });
  });

  it('shares a budget change pro rata and refuses one that empties the buy', () => {
    const [e] = decide([created], update({ budget_change: 1000 }));
    expect(e).toMatchObject({ type: 'MediaBuyUpdated', data: { changed: ['budget'], terms: { total_budget: 5000 } } });
    expect((e as Extract<MediaBuyEvent, { type: 'MediaBuyUpdated' }>).data.terms.packages.map((p) => p.budget)).toEqual([1250, 3750]);
    expect(error([created], update({ budget_change: -4000 }))).toMatchObject({ code: 'VALIDATION_ERROR', field: 'updates.budget_change' });
  });

  it('only completes a live buy, and a buyer_ref is taken once', () => {
    expect(decide([created], { type: 'CompleteMediaBuy', now })[0]).toMatchObject({ data: { status: 'completed', reason: 'flight ended' } });
    expect(error([], { type: 'CompleteMediaBuy', now })).toMatchObject({ code: 'MEDIA_BUY_NOT_FOUND' });
    expect(error([created], { type: 'CreateMediaBuy', terms, needsApproval: false, now })).toMatchObject({ code: 'CONFLICT', field: 'buyer_ref' });
  });
});
