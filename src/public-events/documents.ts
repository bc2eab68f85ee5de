import { stringify } from 'yaml';
import { z } from 'zod';
import { CLOUDEVENTS_SOURCE, publicTopic } from './cloudevents';
import { PUBLIC_DOMAINS, PUBLIC_EVENT_TYPES, cloudEventType, domainOf, type PublicEventName } from './types';

/** The prefix the committed AsyncAPI document shows (config: KAFKA_PUBLIC_TOPIC_PREFIX). */
export const DEFAULT_PUBLIC_TOPIC_PREFIX = 'adcp.public.';

const NAMES = Object.keys(PUBLIC_EVENT_TYPES) as PublicEventName[];
const KAFKA_BINDING_VERSION = '0.5.0';

/**
 * A public type's payload as JSON Schema draft-07 (what AsyncAPI's default schema format builds on),
 * generated from its zod definition: the zod definition is the one source of the contract.
 */
export function payloadSchema(name: PublicEventName): Record<string, unknown> {
  const { $schema: _drop, ...schema } = z.toJSONSchema(PUBLIC_EVENT_TYPES[name].data, { target: 'draft-7', io: 'output' }) as Record<string, unknown>;
  return { title: cloudEventType(name), description: PUBLIC_EVENT_TYPES[name].description, ...schema };
}

/** schema/events/<type>.json: one standalone JSON Schema per public type and version. */
export function eventSchemaFiles(): [file: string, text: string][] {
  return NAMES.map((name) => {
    const id = `${cloudEventType(name)}.json`;
    return [id, JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', $id: id, ...payloadSchema(name) }, null, 2) + '\n'];
  });
}

/** The binary-mode CloudEvents headers every message carries; `ce_type` pins the message's type. */
function headersSchema(name: PublicEventName): Record<string, unknown> {
  const text = { type: 'string', minLength: 1 };
  return {
    type: 'object',
    required: ['ce_specversion', 'ce_id', 'ce_source', 'ce_type', 'ce_time', 'ce_subject', 'ce_tenant', 'content-type'],
    properties: {
      ce_specversion: { const: '1.0' },
      ce_id: { ...text, description: 'Unique per event and stable across redelivery: dedupe by it.' },
      ce_source: { const: CLOUDEVENTS_SOURCE },
      ce_type: { const: cloudEventType(name) },
      ce_time: { type: 'string', format: 'date-time' },
      ce_subject: {
        ...text,
        description: 'The entity the event is about, unique across tenants: `<ce_tenant>/<id>` (the id as its buyer knows it, also in the data), or a registry entity for `shared` events. Also the Kafka key.',
      },
      ce_tenant: {
        type: 'string',
        pattern: '^(t_[A-Za-z0-9_-]{22}|shared)$',
        description:
          'Extension: whose event it is. A buyer\'s events carry an opaque key, stable for the buyer and not reversible (an HMAC of the owner under the operator\'s secret); the registry\'s, which belong to no buyer, carry `shared`. Scope a consumer to a tenant by it.',
      },
      ce_position: { type: 'string', pattern: '^[0-9]+$', description: 'Extension: the gateway log position (resume point for `events tail --from`).' },
      'content-type': { const: 'application/json' },
    },
  };
}

/**
 * schema/asyncapi.yaml: AsyncAPI 3.0 for the public topics, one channel per domain, with Kafka
 * bindings and CloudEvents binary-mode headers; the payloads are the generated JSON Schemas.
 */
export function asyncApiDocument(prefix = DEFAULT_PUBLIC_TOPIC_PREFIX): string {
  const ref = (path: string) => ({ $ref: path });
  const channels: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  for (const domain of PUBLIC_DOMAINS) {
    const names = NAMES.filter((n) => domainOf(n) === domain);
    const topic = publicTopic(prefix, domain);
    channels[domain] = {
      address: topic,
      title: `${domain} events`,
      description:
        `Public ${domain} events, keyed by subject (one entity's events stay in order on one partition; subjects are unique across tenants). ` +
        (domain === 'registry'
          ? 'The registry\'s events belong to no buyer: ce_tenant is `shared`. '
          : 'Every buyer\'s events, each with its tenant (ce_tenant): a topic for the operator\'s own systems, scoped per tenant by that header. ') +
        'The topic prefix is KAFKA_PUBLIC_TOPIC_PREFIX.',
      messages: Object.fromEntries(names.map((n) => [cloudEventType(n), ref(`#/components/messages/${cloudEventType(n)}`)])),
      bindings: { kafka: { topic, bindingVersion: KAFKA_BINDING_VERSION } },
    };
    operations[`publish_${domain}`] = {
      action: 'send',
      channel: ref(`#/channels/${domain}`),
      summary: `The gateway publishes ${domain} events.`,
      messages: names.map((n) => ref(`#/channels/${domain}/messages/${cloudEventType(n)}`)),
    };
  }
  const doc = {
    asyncapi: '3.0.0',
    info: {
      title: 'adcp-gateway public events',
      // 2.0.0: subjects and keys became unique across tenants (`<tenant>/<id>`), and every message says its tenant.
      version: '2.0.0',
      description:
        'The public, versioned event contract of adcp-gateway: CloudEvents 1.0 on Kafka (binary content mode), ' +
        'one topic per domain. Generated by `adcp-gateway schema` from src/public-events; the raw internal log topic (KAFKA_TOPIC) is not part of it.',
    },
    defaultContentType: 'application/json',
    channels,
    operations,
    components: {
      schemas: Object.fromEntries(NAMES.map((n) => [cloudEventType(n), payloadSchema(n)])),
      messages: Object.fromEntries(
        NAMES.map((n) => [
          cloudEventType(n),
          {
            name: cloudEventType(n),
            title: n,
            summary: PUBLIC_EVENT_TYPES[n].description,
            contentType: 'application/json',
            headers: headersSchema(n),
            payload: ref(`#/components/schemas/${cloudEventType(n)}`),
            bindings: { kafka: { key: { type: 'string', description: 'The event subject (ce_subject): unique across tenants.' }, bindingVersion: KAFKA_BINDING_VERSION } },
          },
        ]),
      ),
    },
  };
  return stringify(doc, { lineWidth: 0, aliasDuplicateObjects: false });
}
