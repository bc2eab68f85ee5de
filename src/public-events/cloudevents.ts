import type { PublicEvent } from './mapping';
import { cloudEventType, domainOf } from './types';

/** CloudEvents `source` of everything the gateway publishes (a URI-reference, as the spec asks). */
export const CLOUDEVENTS_SOURCE = '/adcp-gateway';

/** A message for a Kafka producer: CloudEvents 1.0 Kafka protocol binding, binary content mode. */
export interface CloudEventMessage {
  readonly topic: string;
  readonly key: string;
  readonly value: string;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * The event as its Kafka message: attributes in `ce_*` headers, the data alone as the JSON value,
 * keyed by subject (unique across tenants) so one entity's events share a partition and keep their
 * order. Two extensions: `ce_tenant`, whose event it is (an opaque key, or `shared`), and
 * `ce_position`, the internal log position, where `events tail --from` resumes.
 */
export function toCloudEventMessage(e: PublicEvent, topicPrefix: string): CloudEventMessage {
  return {
    topic: publicTopic(topicPrefix, domainOf(e.name)),
    key: e.subject,
    value: JSON.stringify(e.data),
    headers: {
      ce_specversion: '1.0',
      ce_id: e.id,
      ce_source: CLOUDEVENTS_SOURCE,
      ce_type: cloudEventType(e.name),
      ce_time: e.time,
      ce_subject: e.subject,
      ce_tenant: e.tenant,
      ce_position: String(e.position),
      'content-type': 'application/json',
    },
  };
}

/** The topic a domain's public events go to: `<prefix><domain>` (default `adcp.public.media_buy`). */
export function publicTopic(prefix: string, domain: string): string {
  return `${prefix}${domain}`;
}
