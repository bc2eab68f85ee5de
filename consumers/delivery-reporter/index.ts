import { deliveryQueries } from '../../projections/delivery';
import { publicId } from '../../src/shared/ids';
import type { BusHandler } from '../../src/bus/port';
import { appendOnce, handleCommand, loadState } from '../../src/application/command-handler';
import type { DeliveryEvent } from '../../src/domain/delivery/delivery';
import { ENDED_STATUSES, lifecycleOf, mediaBuyDecider, mediaBuyStream, type MediaBuyEvent, type MediaBuyTerms } from '../../src/domain/media-buy/media-buy';
import { elapsedPeriods, type Period, type ReportingFrequency } from '../../src/domain/reporting/periods';
import { reportLogDecider, reportLogStream, unscheduled, type ReportKind, type ReportLogEvent, type ReportLogState } from '../../src/domain/reporting/report-log';
import type { WebhookEvent } from '../../src/domain/webhook/webhook';
import { ConcurrencyError, type EventStore, type StoredEvent } from '../../src/eventstore/port';
import type { ProjectionRunner } from '../../src/projections/runner';
import type { ReadModelStore } from '../../src/readmodel/port';
import { newIdempotencyKey } from '../../src/webhooks/envelope';
import { authOf } from '../webhook-dispatcher';
import { buyStatus3 } from '../../src/wire/adcp3/answers';

export const group = 'delivery-reporter';

/** The read models reports are built from. */
const READS = ['delivery'];

type ReportingWebhook = { url: string; reporting_frequency?: ReportingFrequency; authentication?: { schemes: string[]; credentials: string } };

export interface ReporterDeps {
  store: EventStore;
  readModels: ReadModelStore;
  projections: Pick<ProjectionRunner, 'applied'>;
}

/** One webhook stream per report, named by its key in the buy's report log. */
export const reportStream = (mediaBuyId: string, key: string) => `webhook-report-${mediaBuyId}.${key}`;

/** The reporting period a scheduled report webhook carried. */
const periodOf = (e: StoredEvent) => (JSON.parse((e.data as { body: string }).body) as { result: { reporting_period: { start: string; end: string } } }).result.reporting_period;

const hourFloor = (iso: string) => new Date(Math.floor(Date.parse(iso) / 3600_000) * 3600_000).toISOString();

type Buy = { status: string; activated?: boolean; forcedStatus?: string; terms: MediaBuyTerms; webhook: ReportingWebhook };
type Report = { key: string; notification_type: ReportKind; period: { start: string; end: string }; expected_availability?: string };

const MESSAGES: Record<ReportKind, string> = {
  scheduled: 'Scheduled media buy delivery report available',
  final: 'Final media buy delivery report',
  adjusted: 'Delivery for a reported period was restated',
  delayed: 'Delivery data for this period is delayed',
};

/**
 * Delivery reports to a buy's `reporting_webhook`: a `scheduled` report for each reporting period
 * once delivery has been recorded through its end; an `adjusted` report for a period already
 * reported when late data restates one of its hours; a `delayed` report (status
 * `reporting_delayed`, with `expected_availability`) for the next period when the ad server says
 * its data is late; one `final` report when the buy completes, is canceled or rejected, and nothing
 * after it. Every report first claims the next `sequence_number` in the buy's report log (gapless,
 * increasing), then its webhook is appended once to a stream named after it, so a redelivered
 * event or a second instance issues nothing twice. Terms are read at fire time: a replaced
 * reporting_webhook is honoured from the next report while fires already scheduled keep their URL.
 */
/**
 * A report's status in the buy's own wire's vocabulary: a buy bought over AdCP 3.0 (MCP, A2A)
 * hears the 3.0 status get_media_buys and get_media_buy_delivery tell it (buyStatus3); one bought
 * over the spec's bindings hears the domain's status, as its REST and GraphQL answers say it.
 */
function reportedStatus(buy: Buy, now: Date): string {
  if (buy.terms.wire !== 'adcp3') return buy.status;
  return buyStatus3(lifecycleOf(buy), now);
}

export function deliveryReporter(deps: ReporterDeps): BusHandler {
  async function load(mediaBuyId: string): Promise<Buy | undefined> {
    const { state } = await loadState(deps.store, mediaBuyStream(mediaBuyId), mediaBuyDecider);
    if (state.status === 'none' || !state.terms.reporting_webhook) return undefined;
    return {
      status: state.status as string,
      ...(state.activated ? { activated: true } : {}),
      ...(state.forcedStatus ? { forcedStatus: state.forcedStatus } : {}),
      terms: state.terms,
      webhook: state.terms.reporting_webhook as unknown as ReportingWebhook,
    };
  }

  /**
   * The buy's report log, once every claimed report has its webhook: claiming and scheduling are
   * two appends, and a crash (or a failed append) between them leaves a number no webhook carries
   * yet; it is sent now, under the number it holds.
   */
  async function reportLog(buy: Buy): Promise<ReportLogState> {
    const id = buy.terms.media_buy_id;
    let { state } = await loadState(deps.store, reportLogStream(id), reportLogDecider);
    if (state.reports.size === 0) state = await adoptEarlierReports(buy, state);
    const pending = unscheduled(state);
    for (const r of pending) await issue(buy, r); // the claim already says what the report is about
    return pending.length > 0 ? (await loadState(deps.store, reportLogStream(id), reportLogDecider)).state : state;
  }

  /**
   * Buys that sent reports before the report log existed (their k-th scheduled report is stream
   * `.k`, their final one `.final`): their log is written from those first, in one append, so
   * numbering goes on from where it was.
   */
  async function adoptEarlierReports(buy: Buy, empty: ReportLogState): Promise<ReportLogState> {
    const id = buy.terms.media_buy_id;
    const earlier: { key: string; notification_type: ReportKind; period: { start: string; end: string } }[] = [];
    for (let k = 1; ; k++) {
      const [first] = await deps.store.readStream(reportStream(id, String(k)), { limit: 1 });
      if (!first) break;
      earlier.push({ key: String(k), notification_type: 'scheduled', period: periodOf(first) });
    }
    const [final] = await deps.store.readStream(reportStream(id, 'final'), { limit: 1 });
    if (final) earlier.push({ key: 'final', notification_type: 'final', period: periodOf(final) });
    if (earlier.length === 0) return empty;
    const now = new Date().toISOString();
    let state = empty;
    const events: ReportLogEvent[] = [];
    for (const r of earlier) {
      for (const cmd of [{ type: 'ClaimReport' as const, media_buy_id: id, ...r, now }, { type: 'MarkScheduled' as const, media_buy_id: id, key: r.key, now }]) {
        for (const e of reportLogDecider.decide(cmd, state)) {
          events.push(e);
          state = reportLogDecider.evolve(state, e);
        }
      }
    }
    try {
      await deps.store.append(reportLogStream(id), events.map((e) => ({ type: e.type, data: e.data, metadata: { time: now, principal: 'delivery-reporter' } })), { expectedVersion: 'no_stream' });
      return state;
    } catch (err) {
      if (!(err instanceof ConcurrencyError)) throw err;
      return (await loadState(deps.store, reportLogStream(id), reportLogDecider)).state; // adopted (or claimed) elsewhere
    }
  }

  async function issue(buy: Buy, wanted: Report): Promise<void> {
    let report = wanted;
    const { terms } = buy;
    const now = new Date().toISOString();
    const { state: log } = await handleCommand(
      deps.store,
      reportLogStream(terms.media_buy_id),
      reportLogDecider,
      {
        type: 'ClaimReport',
        media_buy_id: terms.media_buy_id,
        key: report.key,
        notification_type: report.notification_type,
        period: report.period,
        ...(report.expected_availability ? { expected_availability: report.expected_availability } : {}),
        now,
      },
      { now, principal: 'delivery-reporter' },
    );
    const claimed = log.reports.get(report.key);
    if (!claimed) return; // the final report went out first: nothing after it
    if (log.scheduled.has(report.key)) return; // already sent
    // A claim made earlier fixes what the report is about, whatever this caller computed now.
    report = { ...report, period: claimed.period, ...(claimed.expected_availability ? { expected_availability: claimed.expected_availability } : {}) };
    const sequence = claimed.sequence_number;
    const hours = await deliveryQueries.hours(deps.readModels, terms.owner, terms.media_buy_id, hourFloor(report.period.start), report.period.end);
    const byPackage = new Map<string, { impressions: number; clicks: number; spend_cents: number }>();
    for (const h of hours) {
      const p = byPackage.get(h.package_id) ?? { impressions: 0, clicks: 0, spend_cents: 0 };
      p.impressions += h.impressions;
      p.clicks += h.clicks;
      p.spend_cents += h.spend_cents;
      byPackage.set(h.package_id, p);
    }
    const packages = terms.packages.map((p) => {
      const m = byPackage.get(p.package_id) ?? { impressions: 0, clicks: 0, spend_cents: 0 };
      return { package_id: p.package_id, impressions: m.impressions, clicks: m.clicks, spend: m.spend_cents / 100 };
    });
    const sum = (k: 'impressions' | 'clicks' | 'spend') => packages.reduce((s, p) => s + p[k], 0);
    // The buyer's id for the buy (a fixture id is stored under its buyer: src/application/buy-ids.ts).
    const mediaBuyId = publicId(terms.media_buy_id);
    const operationId = `delivery_report_${mediaBuyId}`;
    const idempotencyKey = newIdempotencyKey();
    const body = JSON.stringify({
      idempotency_key: idempotencyKey,
      task_id: `${operationId}_${String(sequence).padStart(6, '0')}`,
      operation_id: operationId,
      task_type: 'media_buy_delivery',
      domain: 'media-buy',
      status: 'completed',
      timestamp: now,
      message: MESSAGES[report.notification_type],
      result: {
        notification_type: report.notification_type,
        sequence_number: sequence,
        reporting_period: report.period,
        currency: terms.currency,
        media_buy_deliveries: [
          {
            media_buy_id: mediaBuyId,
            status: report.notification_type === 'delayed' ? 'reporting_delayed' : reportedStatus(buy, new Date(now)),
            totals: { impressions: sum('impressions'), spend: Math.round(sum('spend') * 100) / 100, clicks: sum('clicks') },
            by_package: packages,
            ...(report.notification_type === 'adjusted' ? { is_adjusted: true } : {}),
            ...(report.notification_type === 'final' ? { is_final: true } : {}),
            ...(report.expected_availability ? { expected_availability: report.expected_availability } : {}),
          },
        ],
      },
    });
    const scheduled: Extract<WebhookEvent, { type: 'WebhookScheduled' }> = {
      type: 'WebhookScheduled',
      data: {
        idempotency_key: idempotencyKey,
        owner: terms.owner,
        notification_type: 'delivery_report',
        adcp_notification_type: report.notification_type,
        sequence_number: sequence,
        media_buy_id: terms.media_buy_id,
        url: buy.webhook.url,
        auth: authOf(buy.webhook, terms.wire),
        body,
        scheduled_at: now,
      },
    };
    await appendOnce(deps.store, reportStream(terms.media_buy_id, report.key), [scheduled]);
    await handleCommand(deps.store, reportLogStream(terms.media_buy_id), reportLogDecider, { type: 'MarkScheduled', media_buy_id: terms.media_buy_id, key: report.key, now }, { now, principal: 'delivery-reporter' });
  }

  const periodsOf = (buy: Buy, through: string): Period[] =>
    elapsedPeriods(buy.terms.start_time, buy.terms.end_time, buy.webhook.reporting_frequency ?? 'daily', through);

  /** Scheduled reports for every elapsed period not issued yet, oldest first. */
  async function catchUp(buy: Buy, through: string): Promise<void> {
    const log = await reportLog(buy);
    for (const p of periodsOf(buy, through)) {
      if (!log.reports.has(String(p.sequence))) await issue(buy, { key: String(p.sequence), notification_type: 'scheduled', period: { start: p.start, end: p.end } });
    }
  }

  async function onDelivery(e: StoredEvent): Promise<void> {
    const d = e.data as { media_buy_id: string; through: string };
    const buy = await load(d.media_buy_id);
    if (!buy || ENDED_STATUSES.has(buy.status)) return;
    await deps.projections.applied(e.position, READS);
    await catchUp(buy, d.through);
  }

  /** A restated hour in a period already reported: report the period again, as adjusted. */
  async function onAdjusted(e: StoredEvent): Promise<void> {
    const d = (e as unknown as Extract<DeliveryEvent, { type: 'DeliveryAdjusted' }>).data;
    const buy = await load(d.media_buy_id);
    if (!buy) return;
    const hour = Date.parse(d.hour.hour_start);
    await deps.projections.applied(e.position, READS);
    const log = await reportLog(buy); // sends this event's own report too, if it was claimed before a crash
    if (log.reports.has(`adjusted.${e.id}`)) return;
    const reported = [...log.reports.values()].find((r) => r.notification_type === 'scheduled' && Date.parse(hourFloor(r.period.start)) <= hour && hour < Date.parse(r.period.end));
    if (!reported) return; // not reported yet: the scheduled report will carry the restated numbers
    await issue(buy, { key: `adjusted.${e.id}`, notification_type: 'adjusted', period: reported.period });
  }

  /** Late data: tell the buyer now about the next period due, and when to expect it. */
  async function onDelayed(e: StoredEvent): Promise<void> {
    const d = (e as unknown as Extract<DeliveryEvent, { type: 'DeliveryDelayed' }>).data;
    const buy = await load(d.media_buy_id);
    if (!buy) return;
    await deps.projections.applied(e.position, READS);
    const log = await reportLog(buy); // sends this event's own report too, if it was claimed before a crash
    if (log.reports.has(`delayed.${e.id}`) || ENDED_STATUSES.has(buy.status)) return;
    const next = periodsOf(buy, buy.terms.end_time).find((p) => !log.reports.has(String(p.sequence)));
    if (!next) return;
    await issue(buy, { key: `delayed.${e.id}`, notification_type: 'delayed', period: { start: next.start, end: next.end }, expected_availability: d.expected_availability });
  }

  async function onTerminal(e: StoredEvent, mediaBuyId: string, at: string): Promise<void> {
    const buy = await load(mediaBuyId);
    if (!buy) return;
    await deps.projections.applied(e.position, READS);
    await catchUp(buy, at);
    const end = Date.parse(at) < Date.parse(buy.terms.end_time) ? at : buy.terms.end_time;
    // A buy that ended before its flight began (rejected, or canceled while waiting) delivered
    // nothing: its final period is empty, zero-length at its end, never one that ends before it starts.
    const start = Date.parse(buy.terms.start_time) < Date.parse(end) ? buy.terms.start_time : end;
    await issue(buy, { key: 'final', notification_type: 'final', period: { start, end } });
  }

  return async (events) => {
    for (const e of events) {
      if (e.type === 'DeliveryRecorded') await onDelivery(e);
      else if (e.type === 'DeliveryAdjusted') await onAdjusted(e);
      else if (e.type === 'DeliveryDelayed') await onDelayed(e);
      else if (e.type === 'MediaBuyRejected') await onTerminal(e, (e.data as { media_buy_id: string }).media_buy_id, (e.data as { at: string }).at);
      else if (e.type === 'MediaBuyStatusChanged') {
        const d = (e as unknown as Extract<MediaBuyEvent, { type: 'MediaBuyStatusChanged' }>).data;
        if (ENDED_STATUSES.has(d.status)) await onTerminal(e, d.media_buy_id, d.at);
      }
    }
  };
}
