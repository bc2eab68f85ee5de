import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { KAFKA_BROKERS, PG_ADMIN_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { BIN, ROOT, spawnGateway, tempDir, type GatewayProcess } from '../support/gateway';

const run = promisify(execFile);

/** Messages on the topic: the sum of its partitions' high-water marks (the relay is not transactional). */
async function messagesOn(kafka: Kafka, topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);
  } finally {
    await admin.disconnect();
  }
}

async function eventsIn(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return Number((await c.query<{ n: string }>('SELECT count(*) AS n FROM events')).rows[0]!.n);
  } finally {
    await c.end();
  }
}

/** `count` create_media_buy calls spread round-robin over the gateways, `concurrency` at a time. */
async function createsSpreadOver(gateways: readonly GatewayProcess[], key: string, count: number, concurrency: number): Promise<void> {
  let next = 0;
  const body = (i: number) =>
    JSON.stringify({
      buyer_ref: `scale-${i}`,
      brand_manifest: { url: 'https://acme.example' },
      packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }],
      start_time: { type: 'asap' },
      end_time: new Date(Date.now() + 30 * 86_400_000).toISOString(),
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < count; i = next++) {
        const gw = gateways[i % gateways.length]!;
        const res = await fetch(`${gw.url}/api/tasks/create_media_buy`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: body(i) });
        if (res.status >= 300) throw new Error(`create ${i} on ${gw.url}: ${res.status} ${await res.text()}`);
      }
    }),
  );
}

describeWith('PostgreSQL and Kafka', !!PG_ADMIN_URL && !!KAFKA_BROKERS, 'scale-out: several gateways on one PostgreSQL and one topic', () => {
  it('publishes each event once and stays put when idle (one relay per topic, no republishing loop)', async () => {
    const db = await createTestDatabase();
    const topic = `adcp.events.scale-${randomBytes(4).toString('hex')}`;
    const shared = { EVENT_STORE_URL: db.url, KAFKA_BROKERS: KAFKA_BROKERS!, KAFKA_TOPIC: topic, KAFKA_FEED_TOPIC: `${topic}.feed`, APPROVAL_POLICY: 'never' };
    const kafka = new Kafka({ clientId: 'scale-it', brokers: KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING });
    const gateways: GatewayProcess[] = [];
    try {
      for (let i = 0; i < 2; i++) gateways.push(await spawnGateway({ ...shared, DATA_DIR: tempDir() }, 60_000));
      const key = (await run(process.execPath, [BIN, 'keys', 'create', '--org', 'scale', '--role', 'buyer'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...shared, DATA_DIR: tempDir() } })).stdout.trim();
      await eventually(async () => (await fetch(`${gateways[1]!.url}/api/tasks/get_media_buys`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: '{}' })).status === 200, 20_000, 'the key on both gateways');

      await createsSpreadOver(gateways, key, 200, 8);

      // Every event reaches the topic...
      const stored = await eventsIn(db.url);
      await eventually(async () => (await messagesOn(kafka, topic)) >= stored, 60_000, `the ${stored} stored events on the topic`);
      // ...once: an idle cluster publishes nothing more (the loop grew by ~360 messages/s). Waiting
      // is the point here: longer than the relay's lease and several of its poll intervals.
      const before = { events: await eventsIn(db.url), messages: await messagesOn(kafka, topic) };
      await new Promise((r) => setTimeout(r, 4000));
      const after = { events: await eventsIn(db.url), messages: await messagesOn(kafka, topic) };
      expect(after.messages - before.messages).toBeLessThanOrEqual(after.events - before.events);
      expect(after.messages).toBeLessThanOrEqual(Math.ceil(after.events * 1.01));
    } finally {
      for (const gw of gateways) expect(await gw.stop()).toBe(0);
      await db.drop();
    }
  }, 180_000);
});
