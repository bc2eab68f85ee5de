import { relayMessages } from '../../../src/bus/kafka';
import type { StoredEvent } from '../../../src/eventstore/port';
import { toCloudEventMessage } from '../../../src/public-events/cloudevents';
import { toPublicEvent, type Attribution } from '../../../src/public-events/mapping';
import { tenantKeyer } from '../../../src/public-events/tenants';

const AT = '2026-11-27T07:00:00.000Z';
let position = 0;

function stored(type: string, data: unknown, streamId: string, metadata: Record<string, unknown> = {}): StoredEvent {
  position += 1;
  return { id: `0190f000-0000-7000-8000-${String(position).padStart(12, '0')}`, streamId, type, data, metadata: { time: AT, principal: 'org-buyer', ...metadata }, streamVersion: position, position };
}

const statusChange = (id: string, from: string, status: string) => stored('MediaBuyStatusChanged', { media_buy_id: id, from, status, at: AT }, `media-buy-${id}`);

// A batch as the relay reads it: published types, one never published (a credential), a feed entry.
const batch: StoredEvent[] = [
  statusChange('mb_1', 'active', 'paused'),
  stored('ApiKeyIssued', { keyId: 'k1', org: 'acme', role: 'buyer', salt: 's', hash: 'h', at: AT }, 'api-key-k1'),
  stored('TaskStatusChanged', { task_id: 'task_1', from: 'submitted', status: 'completed', message: 'done', actor: 'publisher', at: AT }, 'task-task_1', { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }),
  statusChange('mb_1', 'paused', 'active'),
  stored('FeedEntryRecorded', { event_id: 'fe_1', event_type: 'publisher.updated', entity_type: 'publisher', entity_id: 'prop_1', payload: { a: 1 }, actor: 'admin', created_at: AT }, 'feed'),
  statusChange('mb_2', 'active', 'completed'),
];

const attribution: Attribution = { tenantKey: tenantKeyer(Buffer.alloc(32, 3)), streamOwner: async () => 'acme' };
const T = attribution.tenantKey('acme');

describe('relayMessages: what the relay sends for one batch of the log', () => {
  it('sends every stored event on the raw topic, in log order, keyed by stream, with its type, position, id and trace headers', async () => {
    const [raw] = await relayMessages(batch, { topic: 'log' });
    expect(raw!.topic).toBe('log');
    expect(raw!.messages.map((m) => m.key)).toEqual(batch.map((e) => e.streamId));
    expect(raw!.messages.map((m) => JSON.parse(String(m.value)))).toEqual(batch);
    expect(raw!.messages[2]!.headers).toEqual({ type: 'TaskStatusChanged', position: String(batch[2]!.position), 'event-id': batch[2]!.id, traceparent: batch[2]!.metadata.traceparent });
  });

  it('without a public prefix or feed topic sends the raw topic alone', async () => {
    expect((await relayMessages(batch, { topic: 'log' })).map((t) => t.topic)).toEqual(['log']);
  });

  it('refuses to publish the public topics without the tenant keys', async () => {
    await expect(relayMessages(batch, { topic: 'log', publicTopicPrefix: 'adcp.public.' })).rejects.toThrow(/tenant keys/);
  });

  it('adds the feed entries and the public CloudEvents, one group per topic, each in log order, nothing unpublished', async () => {
    const sent = await relayMessages(batch, { topic: 'log', feedTopic: 'feed', publicTopicPrefix: 'adcp.public.', attribution });
    expect(sent.map((t) => t.topic)).toEqual(['log', 'feed', 'adcp.public.media_buy', 'adcp.public.task', 'adcp.public.registry']);
    expect(sent[1]!.messages).toEqual([{ key: 'prop_1', value: JSON.stringify(batch[4]!.data), headers: { type: 'publisher.updated', position: String(batch[4]!.position), 'event-id': 'fe_1' } }]);
    // Exactly the mapping's messages, in the order their events hold in the log.
    const expected = (await Promise.all(batch.map((e) => toPublicEvent(e, attribution)))).filter((p) => p !== undefined).map((p) => toCloudEventMessage(p, 'adcp.public.'));
    const publicSent = sent.slice(2).flatMap((t) => t.messages.map((m) => ({ topic: t.topic, key: m.key, value: m.value, headers: m.headers })));
    expect(publicSent.sort((a, b) => Number(a.headers!.ce_position) - Number(b.headers!.ce_position))).toEqual(expected);
    expect(sent[2]!.messages.map((m) => [m.key, JSON.parse(String(m.value)).status])).toEqual([
      [`${T}/mb_1`, 'paused'],
      [`${T}/mb_1`, 'active'],
      [`${T}/mb_2`, 'completed'],
    ]);
    expect(publicSent.some((m) => String(m.headers!.ce_type).includes('api_key'))).toBe(false);
  });
});
