import { randomUUID } from 'node:crypto';
import { publicId } from '../../src/shared/ids';
import { mediaBuyQueries } from '../../projections/media-buys';
import { appendOnce, handleCommand, loadState } from '../../src/application/command-handler';
import type { BusHandler } from '../../src/bus/port';
import { CATALOG_STREAM, type Catalog } from '../../src/domain/catalog/catalog';
import { impairmentDecider, impairmentStream, type Impairment, type ImpairmentEvent } from '../../src/domain/impairment/impairment';
import { mediaBuyDecider, mediaBuyStream } from '../../src/domain/media-buy/media-buy';
import type { WebhookEvent } from '../../src/domain/webhook/webhook';
import type { EventStore, StoredEvent } from '../../src/eventstore/port';
import type { ProjectionRunner } from '../../src/projections/runner';
import type { ReadModelStore } from '../../src/readmodel/port';
import { newIdempotencyKey } from '../../src/webhooks/envelope';
import { authOf, type PushConfig } from '../webhook-dispatcher';

export const group = 'impairment-monitor';

export interface MonitorDeps {
  store: EventStore;
  readModels: ReadModelStore;
  projections: Pick<ProjectionRunner, 'applied'>;
}


/** Which publisher domains each product sells, in one catalog. */
const domainsByProduct = (c: Catalog) => new Map(c.products.map((p) => [p.product_id, new Set(p.publisher_domains)]));

/**
 * Impairments from catalog changes. When the operator republishes the catalog, every live buy's
 * packages are checked against it: a publisher property a package's product sold before and no
 * longer does opens an impairment (`property_depublished` when the property left the catalog,
 * `seller_removed` when only the product stopped selling it); when it returns, the impairment is
 * resolved. Each opening and closing fires once on the buy's `push_notification_config` (its
 * persistent channel) with `notification_id` = the impairment id, so a re-emission is
 * recognisable; `get_media_buys` shows the open ones in `impairments[]`.
 */
export function impairmentMonitor(deps: MonitorDeps): BusHandler {
  async function notify(e: ImpairmentEvent, impairment: Impairment, at: string): Promise<void> {
    const { state } = await loadState(deps.store, mediaBuyStream(impairment.media_buy_id), mediaBuyDecider);
    if (state.status === 'none') return;
    const config = state.terms.push_notification_config as PushConfig | undefined;
    if (!config) return;
    const resolved = e.type === 'ImpairmentResolved';
    const idempotencyKey = newIdempotencyKey();
    const body = JSON.stringify({
      idempotency_key: idempotencyKey,
      notification_id: impairment.impairment_id,
      task_id: `impairment_${impairment.impairment_id}`,
      operation_id: config.operation_id,
      task_type: 'create_media_buy',
      domain: 'media-buy',
      status: 'completed',
      timestamp: at,
      message: resolved ? `Resolved: ${impairment.reason}` : impairment.reason,
      result: {
        notification_type: 'impairment',
        media_buy_id: publicId(impairment.media_buy_id),
        impairment: { ...impairment, media_buy_id: publicId(impairment.media_buy_id), ...(resolved ? { resolved_at: at } : {}) },
      },
    });
    const scheduled: Extract<WebhookEvent, { type: 'WebhookScheduled' }> = {
      type: 'WebhookScheduled',
      data: {
        idempotency_key: idempotencyKey,
        owner: impairment.owner,
        notification_type: 'media_buy_status',
        adcp_notification_type: 'impairment',
        media_buy_id: impairment.media_buy_id,
        url: config.url,
        auth: authOf(config, state.terms.wire),
        body,
        scheduled_at: new Date().toISOString(),
      },
    };
    await appendOnce(deps.store, `webhook-impairment-${impairment.impairment_id}.${resolved ? 'resolved' : 'opened'}`, [scheduled]);
  }

  async function onCatalog(e: StoredEvent): Promise<void> {
    const next = (e.data as { catalog: Catalog }).catalog;
    const [prevEvent] = e.streamVersion > 1 ? await deps.store.readStream(CATALOG_STREAM, { fromVersion: e.streamVersion - 1, limit: 1 }) : [];
    if (!prevEvent) return;
    const prev = (prevEvent.data as { catalog: Catalog }).catalog;
    const before = domainsByProduct(prev);
    const after = domainsByProduct(next);
    const listed = new Set(next.publisher_properties.map((p) => p.publisher_domain));
    const at = (e.data as { publishedAt?: string }).publishedAt ?? new Date().toISOString();
    await deps.projections.applied(e.position, ['media-buys']);
    for await (const buy of mediaBuyQueries.live(deps.readModels)) {
      // domain → packages of this buy that lost it
      const lost = new Map<string, string[]>();
      const sold = new Set<string>();
      for (const p of buy.terms.packages) {
        for (const d of after.get(p.product_id) ?? []) sold.add(d);
        for (const d of before.get(p.product_id) ?? []) {
          if (!after.get(p.product_id)?.has(d)) lost.set(d, [...(lost.get(d) ?? []), p.package_id]);
        }
      }
      for (const [domain, packageIds] of lost) {
        const depublished = !listed.has(domain);
        const impairment: Impairment = {
          impairment_id: `imp_${randomUUID()}`,
          media_buy_id: buy.media_buy_id,
          owner: buy.owner,
          resource_type: 'property',
          resource_id: domain,
          package_ids: packageIds,
          transition: { from: 'published', to: depublished ? 'depublished' : 'withdrawn' },
          reason_code: depublished ? 'property_depublished' : 'seller_removed',
          reason: depublished ? `${domain} is no longer offered by this seller` : `the package's product no longer sells ${domain}`,
          observed_at: at,
        };
        const { events } = await handleCommand(deps.store, impairmentStream(buy.media_buy_id, 'property', domain), impairmentDecider, { type: 'OpenImpairment', impairment }, { now: at, principal: 'impairment-monitor' });
        for (const ev of events) await notify(ev, impairment, at);
      }
      // Properties this buy's products sell again: close what was open for them.
      for (const domain of sold) {
        const stream = impairmentStream(buy.media_buy_id, 'property', domain);
        const { state } = await loadState(deps.store, stream, impairmentDecider);
        if (!state.open) continue;
        const open = state.open;
        const { events } = await handleCommand(deps.store, stream, impairmentDecider, { type: 'ResolveImpairment', now: at }, { now: at, principal: 'impairment-monitor' });
        for (const ev of events) await notify(ev, open, at);
      }
    }
  }

  return async (events) => {
    for (const e of events) if (e.type === 'CatalogPublished') await onCatalog(e);
  };
}
