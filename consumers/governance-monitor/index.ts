import { deliveryQueries } from '../../projections/delivery';
import { appendOnce, loadState } from '../../src/application/command-handler';
import { reportDeliveryToGovernance } from '../../src/application/governance/consult';
import type { TaskPorts } from '../../src/application/ports';
import type { BusHandler } from '../../src/bus/port';
import { ENDED_STATUSES, mediaBuyDecider, mediaBuyStream, type MediaBuyTerms } from '../../src/domain/media-buy/media-buy';
import type { StoredEvent } from '../../src/eventstore/port';
import { AppError } from '../../src/shared/errors';

export const group = 'governance-monitor';

const DAY_MS = 86_400_000;
/** Spend this far from an even pace through the flight is reported as ahead or behind. */
const PACING_TOLERANCE = 0.1;

/** The stream that records one day's delivery check of one buy (its first event is the claim). */
export const deliveryCheckStream = (mediaBuyId: string, day: string) => `governance-delivery-${mediaBuyId}.${day}`;

/**
 * Delivery monitoring for governed buys: once a UTC day of a buy's delivery is complete, the seller
 * reports it to the buyer's governance agent (a delivery-phase `check_governance`: the day's and
 * the cumulative spend and impressions, and the pace against an even spend of the budget over the
 * flight), and records the agent's answer (its status and findings: drift, overspend) as an event.
 * Each day is claimed first (an append that only one attempt can make), so a redelivered event or
 * a second instance never reports a day twice; a day the agent could not take is recorded as
 * failed, not retried (the next day's report carries the cumulative figures).
 */
export function governanceMonitor(ports: TaskPorts): BusHandler {
  async function onDelivery(e: StoredEvent): Promise<void> {
    const d = e.data as { media_buy_id: string; through: string };
    const { state } = await loadState(ports.store, mediaBuyStream(d.media_buy_id), mediaBuyDecider);
    if (state.status === 'none' || !state.terms.governance || ENDED_STATUSES.has(state.status)) return;
    // The last whole UTC day the delivery now covers.
    const dayEnd = Math.floor(Date.parse(d.through) / DAY_MS) * DAY_MS;
    const dayStart = dayEnd - DAY_MS;
    if (dayStart < Math.floor(Date.parse(state.terms.start_time) / DAY_MS) * DAY_MS) return;
    const day = new Date(dayStart).toISOString().slice(0, 10);
    const stream = deliveryCheckStream(d.media_buy_id, day);
    const at = ports.clock().toISOString();
    const claimed = await appendOnce(ports.store, stream, [{ type: 'GovernanceDeliveryCheckClaimed', data: { media_buy_id: d.media_buy_id, owner: state.terms.owner, day, at }, metadata: { time: at, principal: group } }]);
    if (!claimed) return;
    await ports.projections.applied(e.position, ['delivery']);
    const metrics = await metricsOf(state.terms, new Date(dayStart).toISOString(), new Date(dayEnd).toISOString());
    let outcome: { type: string; data: Record<string, unknown> };
    try {
      const answer = await reportDeliveryToGovernance(ports, state.terms, metrics);
      outcome = {
        type: 'GovernanceDeliveryChecked',
        data: { media_buy_id: d.media_buy_id, owner: state.terms.owner, day, check_id: answer.check_id, status: answer.status, findings: answer.findings ?? [], metrics, at: ports.clock().toISOString() },
      };
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      outcome = { type: 'GovernanceDeliveryCheckFailed', data: { media_buy_id: d.media_buy_id, owner: state.terms.owner, day, code: err.code, message: err.message, at: ports.clock().toISOString() } };
    }
    await ports.store.append(stream, [{ ...outcome, metadata: { time: outcome.data.at as string, principal: group } }], { expectedVersion: 1 });
  }

  async function metricsOf(terms: MediaBuyTerms, start: string, end: string): Promise<Record<string, unknown>> {
    const hours = await deliveryQueries.hours(ports.readModels, terms.owner, terms.media_buy_id, undefined, end);
    let spend = 0;
    let impressions = 0;
    let cumulativeSpend = 0;
    let cumulativeImpressions = 0;
    for (const h of hours) {
      cumulativeSpend += h.spend_cents;
      cumulativeImpressions += h.impressions;
      if (h.hour_start >= start) {
        spend += h.spend_cents;
        impressions += h.impressions;
      }
    }
    const flightStart = Date.parse(terms.start_time);
    const elapsed = Math.min(1, Math.max(0, (Date.parse(end) - flightStart) / (Date.parse(terms.end_time) - flightStart)));
    const expected = terms.total_budget * elapsed * 100;
    const ratio = expected > 0 ? cumulativeSpend / expected : 1;
    return {
      reporting_period: { start, end },
      spend: spend / 100,
      cumulative_spend: cumulativeSpend / 100,
      impressions,
      cumulative_impressions: cumulativeImpressions,
      pacing: ratio > 1 + PACING_TOLERANCE ? 'ahead' : ratio < 1 - PACING_TOLERANCE ? 'behind' : 'on_track',
    };
  }

  return async (events) => {
    for (const e of events) if (e.type === 'DeliveryRecorded') await onDelivery(e);
  };
}
