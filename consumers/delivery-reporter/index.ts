import { deliveryQueries } from '../../projections/delivery';
import type { BusHandler } from '../../src/bus/port';
import { appendOnce, loadState } from '../../src/application/command-handler';
import { mediaBuyDecider, mediaBuyStream, type MediaBuyEvent, type MediaBuyTerms } from '../../src/domain/media-buy/media-buy';
import { elapsedPeriods, type Period, type ReportingFrequency } from '../../src/domain/reporting/periods';
import type { WebhookEvent } from '../../src/domain/webhook/webhook';
import type { EventStore, StoredEvent } from '../../src/eventstore/port';
import type { ProjectionRunner } from '../../src/projections/runner';
import type { ReadModelStore } from '../../src/readmodel/port';
import { newIdempotencyKey } from '../../src/webhooks/envelope';
import { authOf } from '../webhook-dispatcher';

export const group = 'delivery-reporter';

const TERMINAL = new Set(['completed', 'canceled', 'rejected']);
type ReportingWebhook = { url: string; reporting_frequency?: ReportingFrequency; authentication?: { schemes: string[]; credentials: string } };

export interface ReporterDeps {
  store: EventStore;
  readModels: ReadModelStore;
  projections: Pick<ProjectionRunner, 'waitFor'>;
}

/** One stream per report: `k` for the k-th scheduled period, `final` for the last one. */
export const reportStream = (mediaBuyId: string, which: number | 'final') => `webhook-report-${mediaBuyId}.${which}`;

const hourFloor = (iso: string) => new Date(Math.floor(Date.parse(iso) / 3600_000) * 3600_000).toISOString();

/**
 * Delivery reports to a buy's `reporting_webhook`: a `scheduled` report for each reporting period
 * once delivery has been recorded through its end (sequence_number k for the k-th period), then
 * one `final` report when the buy completes, is canceled or rejected, and nothing after it. Each
 * report is its own webhook stream named after its period, so a redelivered event (or a second
 * instance) issues it once; the terms are read at fire time, so a replaced reporting_webhook is
 * honoured from the next report while fires already scheduled keep their URL.
 */
export function deliveryReporter(deps: ReporterDeps): BusHandler {
  const exists = async (stream: string) => (await deps.store.readStream(stream, { limit: 1 })).length > 0;

  async function load(mediaBuyId: string) {
    const { state } = await loadState(deps.store, mediaBuyStream(mediaBuyId), mediaBuyDecider);
    if (state.status === 'none' || !state.terms.reporting_webhook) return undefined;
    return { status: state.status as string, terms: state.terms, webhook: state.terms.reporting_webhook as unknown as ReportingWebhook };
  }

  async function issue(
    stream: string,
    buy: { status: string; terms: MediaBuyTerms; webhook: ReportingWebhook },
    report: { notification_type: 'scheduled' | 'final'; sequence: number; start: string; end: string },
  ): Promise<void> {
    const { terms } = buy;
    const hours = await deliveryQueries.hours(deps.readModels, terms.owner, terms.media_buy_id, hourFloor(report.start), report.end);
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
    const operationId = `delivery_report_${terms.media_buy_id}`;
    const idempotencyKey = newIdempotencyKey();
    const body = JSON.stringify({
      idempotency_key: idempotencyKey,
      task_id: `${operationId}_${String(report.sequence).padStart(6, '0')}`,
      operation_id: operationId,
      task_type: 'media_buy_delivery',
      domain: 'media-buy',
      status: 'completed',
      timestamp: new Date().toISOString(),
      message: report.notification_type === 'final' ? 'Final media buy delivery report' : 'Scheduled media buy delivery report available',
      result: {
        notification_type: report.notification_type,
        sequence_number: report.sequence,
        reporting_period: { start: report.start, end: report.end },
        currency: terms.currency,
        media_buy_deliveries: [
          {
            media_buy_id: terms.media_buy_id,
            status: buy.status,
            totals: { impressions: sum('impressions'), spend: Math.round(sum('spend') * 100) / 100, clicks: sum('clicks') },
            by_package: packages,
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
        sequence_number: report.sequence,
        media_buy_id: terms.media_buy_id,
        url: buy.webhook.url,
        auth: authOf({ url: buy.webhook.url, operation_id: operationId, authentication: buy.webhook.authentication }),
        body,
        scheduled_at: new Date().toISOString(),
      },
    };
    await appendOnce(deps.store, stream, [scheduled]);
  }

  /** Scheduled reports for every elapsed period not issued yet (newest issued found by probing back). */
  async function catchUp(buy: NonNullable<Awaited<ReturnType<typeof load>>>, through: string): Promise<Period[]> {
    const periods = elapsedPeriods(buy.terms.start_time, buy.terms.end_time, buy.webhook.reporting_frequency ?? 'daily', through);
    let firstMissing = periods.length;
    while (firstMissing > 0 && !(await exists(reportStream(buy.terms.media_buy_id, firstMissing)))) firstMissing--;
    for (const p of periods.slice(firstMissing)) {
      await issue(reportStream(buy.terms.media_buy_id, p.sequence), buy, { notification_type: 'scheduled', ...p });
    }
    return periods;
  }

  async function onDelivery(e: StoredEvent): Promise<void> {
    const d = e.data as { media_buy_id: string; through: string };
    const buy = await load(d.media_buy_id);
    if (!buy || TERMINAL.has(buy.status) || (await exists(reportStream(d.media_buy_id, 'final')))) return;
    await deps.projections.waitFor(e.position);
    await catchUp(buy, d.through);
  }

  async function onTerminal(e: StoredEvent, mediaBuyId: string, at: string): Promise<void> {
    const buy = await load(mediaBuyId);
    if (!buy || (await exists(reportStream(mediaBuyId, 'final')))) return;
    await deps.projections.waitFor(e.position);
    const periods = await catchUp(buy, at);
    const end = Date.parse(at) < Date.parse(buy.terms.end_time) ? at : buy.terms.end_time;
    await issue(reportStream(mediaBuyId, 'final'), buy, { notification_type: 'final', sequence: periods.length + 1, start: buy.terms.start_time, end });
  }

  return async (events) => {
    for (const e of events) {
      if (e.type === 'DeliveryRecorded') await onDelivery(e);
      else if (e.type === 'MediaBuyRejected') await onTerminal(e, (e.data as { media_buy_id: string }).media_buy_id, (e.data as { at: string }).at);
      else if (e.type === 'MediaBuyStatusChanged') {
        const d = (e as unknown as Extract<MediaBuyEvent, { type: 'MediaBuyStatusChanged' }>).data;
        if (TERMINAL.has(d.status)) await onTerminal(e, d.media_buy_id, d.at);
      }
    }
  };
}
