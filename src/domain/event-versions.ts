/**
 * The shape version of every stored event type, and the upcasters that bring an older shape to the
 * current one. The store stamps `metadata.schemaVersion` from `currentEventVersions` on append
 * (an event stored without one is version 1), and its read path (src/eventstore/upcasting.ts)
 * runs an old event through the upcasters `from` its version up to the current one, so deciders,
 * projections, consumers and the public mapping only ever see the current shape.
 *
 * To change an event's shape: raise its version here, add the upcaster from the previous version,
 * and add a fixture of the old shape to test/integration/upcasting.test.ts (docs/events.md).
 */

import { legacyDedupScope } from './receiver/receiver';

/** Rewrites the data of one event of `type` stored at version `from` into version `from + 1`. Pure. */
export interface Upcaster {
  readonly type: string;
  readonly from: number;
  up(data: Readonly<Record<string, unknown>>): Record<string, unknown>;
}

/** Types whose shape changed since the log began, at their current version; every other type is at 1. */
export const currentEventVersions: Readonly<Record<string, number>> = {
  WebhookScheduled: 2,
  WebhookReceived: 2,
};

export const upcasters: readonly Upcaster[] = [
  {
    // 67c1aa1 (impairments) renamed the delivery report's AdCP kind `report_type` to
    // `adcp_notification_type`, as impairments carry one too. Logs written before it still hold
    // `report_type`: without this, their report webhooks showed in webhook activity as
    // `delivery_report` instead of `scheduled` / `final`.
    type: 'WebhookScheduled',
    from: 1,
    up: ({ report_type, ...rest }) => (report_type === undefined || rest.adcp_notification_type !== undefined ? rest : { ...rest, adcp_notification_type: report_type }),
  },
  {
    // Issue 45: the receiver deduplicated by the sender name an endpoint claims, which any buyer
    // can claim; now by `dedup_scope` (the endpoint, or the verified signing key). Webhooks
    // accepted before it were deduplicated by that name: their scope says so, so the
    // received-webhooks projection keys them as they were.
    type: 'WebhookReceived',
    from: 1,
    up: (data) => (typeof data.dedup_scope === 'string' ? { ...data } : { ...data, dedup_scope: legacyDedupScope(String(data.sender)) }),
  },
];
