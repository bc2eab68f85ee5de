import { decideAdjustment, foldDelivery, packageTotals } from '../../src/domain/delivery/delivery';
import { reportLogDecider, unscheduled, type ReportKind, type ReportLogCommand, type ReportLogState } from '../../src/domain/reporting/report-log';
import { AppError } from '../../src/shared/errors';

const period = { start: '2026-11-20T00:00:00.000Z', end: '2026-11-21T00:00:00.000Z' };
const claim = (key: string, notification_type: ReportKind = 'scheduled'): ReportLogCommand => ({ type: 'ClaimReport', media_buy_id: 'mb1', key, notification_type, period, now: '2026-11-21T00:00:00Z' });
const run = (commands: ReportLogCommand[]): ReportLogState =>
  commands.reduce((state, c) => reportLogDecider.decide(c, state).reduce(reportLogDecider.evolve, state), reportLogDecider.initialState());

describe('report log: gapless sequence numbers per buy', () => {
  it('numbers reports in claim order whatever their kind, and a second claim of a key changes nothing', () => {
    const state = run([claim('1'), claim('adjusted.e1', 'adjusted'), claim('1'), claim('delayed.e2', 'delayed'), claim('2')]);
    expect([...state.reports.values()].map((r) => `${r.sequence_number} ${r.key}`)).toEqual(['1 1', '2 adjusted.e1', '3 delayed.e2', '4 2']);
  });

  it('knows which claims still lack their webhook', () => {
    const mark = (key: string): ReportLogCommand => ({ type: 'MarkScheduled', media_buy_id: 'mb1', key, now: '2026-11-21T00:00:00Z' });
    const state = run([claim('1'), mark('1'), claim('delayed.e1', 'delayed'), claim('2'), mark('2'), mark('2'), mark('nope')]);
    expect(unscheduled(state).map((r) => r.key)).toEqual(['delayed.e1']);
    expect([...state.scheduled]).toEqual(['1', '2']);
  });

  it('issues nothing after the final report', () => {
    const state = run([claim('1'), claim('final', 'final')]);
    expect(state.finalIssued).toBe(true);
    expect(reportLogDecider.decide(claim('adjusted.e9', 'adjusted'), state)).toEqual([]);
    expect(reportLogDecider.decide(claim('final', 'final'), state)).toEqual([]);
  });
});

describe('delivery restatements', () => {
  const recorded = foldDelivery([
    {
      type: 'DeliveryRecorded',
      data: {
        media_buy_id: 'mb1',
        owner: 'acme',
        currency: 'USD',
        through: '2026-11-20T02:00:00.000Z',
        hours: [
          { package_id: 'p1', hour_start: '2026-11-20T00:00:00.000Z', impressions: 1000, clicks: 3, spend_cents: 500 },
          { package_id: 'p1', hour_start: '2026-11-20T01:00:00.000Z', impressions: 1000, clicks: 2, spend_cents: 500 },
        ],
      },
    },
  ]);
  const buy = { media_buy_id: 'mb1', owner: 'acme', packages: [{ package_id: 'p1', budget: 12 } as never] };
  const input = { package_id: 'p1', hour_start: '2026-11-20T01:00:00Z', impressions: 900, clicks: 1, spend_cents: 450, reason: 'IVT', now: '2026-11-21T00:00:00Z' };
  const refused = (over: Partial<typeof input>) => {
    try {
      decideAdjustment(recorded, buy, { ...input, ...over });
    } catch (err) {
      return err instanceof AppError ? { code: err.code, field: err.field } : err;
    }
    return 'accepted';
  };

  it('restates a recorded hour, keeping what it replaces; the fold and totals follow', () => {
    const event = decideAdjustment(recorded, buy, input);
    expect(event.data).toMatchObject({ hour: { hour_start: '2026-11-20T01:00:00.000Z', impressions: 900, spend_cents: 450 }, previous: { impressions: 1000, spend_cents: 500 }, reason: 'IVT' });
    const after = foldDelivery([{ type: 'DeliveryRecorded', data: { media_buy_id: 'mb1', owner: 'acme', currency: 'USD', through: '2026-11-20T02:00:00.000Z', hours: [...recorded.hours.values()] } }, event]);
    expect(packageTotals(after).get('p1')).toEqual({ impressions: 1900, clicks: 4, spend: 950 });
    expect(after.through).toBe(Date.parse('2026-11-20T02:00:00.000Z'));
  });

  it.each([
    [{ package_id: 'p9' }, 'NOT_FOUND', 'package_id'],
    [{ hour_start: '2026-11-20T01:30:00Z' }, 'VALIDATION_ERROR', 'hour_start'],
    [{ hour_start: '2026-11-20T05:00:00Z' }, 'NOT_FOUND', 'hour_start'],
    [{ impressions: -1 }, 'VALIDATION_ERROR', 'impressions'],
    [{ clicks: 2000 }, 'VALIDATION_ERROR', 'clicks'],
    [{ spend_cents: 1.5 }, 'VALIDATION_ERROR', 'spend'],
    [{ spend_cents: 800 }, 'VALIDATION_ERROR', 'spend'],
    [{ reason: '  ' }, 'VALIDATION_ERROR', 'reason'],
  ])('refuses %j with %s on %s', (over, code, field) => {
    expect(refused(over as never)).toEqual({ code, field });
  });
});
