/**
 * The floor of a create on PostgreSQL + Kafka (bench row create_media_buy_rest_postgres_kafka_floor):
 * what the libraries the gateway is built on cost for the least a create must do, with none of
 * the gateway's code. A process of its own, started like a gateway (`node <this> serve`, the
 * same environment), serving POST /api/tasks/create_media_buy:
 * - fastify reads and parses the JSON body, and writes a JSON answer;
 * - node-postgres makes one round trip: the log's own append function (the gateway's schema),
 *   one event of the body's size;
 * - kafkajs publishes each appended event as one record, in batches of up to 500 sent one after
 *   the other, each after the previous ack (the relay's steps), with the relay's producer settings.
 * No authentication, validation, projection, idempotency, consumer or webhook.
 */
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import { Kafka, logLevel, type Message } from 'kafkajs';
import pg from 'pg';
import { POSTGRES_SCHEMA } from '../../src/eventstore/postgres';

async function main(): Promise<void> {
  const url = process.env.EVENT_STORE_URL!;
  const topic = process.env.KAFKA_TOPIC!;
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  await pool.query(POSTGRES_SCHEMA);
  const kafka = new Kafka({ clientId: 'adcp-floor', brokers: process.env.KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();

  let queue: Message[] = [];
  let stopped = false;
  let wake: (() => void) | undefined;
  const relay = (async () => {
    while (!stopped) {
      if (queue.length === 0) {
        await new Promise<void>((r) => (wake = r));
        continue;
      }
      const batch = queue.slice(0, 500);
      queue = queue.slice(batch.length);
      await producer.sendBatch({ acks: -1, topicMessages: [{ topic, messages: batch }] });
    }
  })();

  const app = Fastify({ bodyLimit: 64 * 1024 });
  app.get('/readyz', async () => ({ ready: true }));
  app.post('/api/tasks/create_media_buy', async (req) => {
    const body = req.body as Record<string, unknown>;
    const id = `mb_${randomUUID()}`;
    const time = new Date().toISOString();
    const event = { id: randomUUID(), type: 'MediaBuyCreated', data: { ...body, media_buy_id: id, owner: 'bench', status: 'active', at: time }, meta: { time, principal: 'bench' } };
    const stream = `media-buy-${id}`;
    const { rows } = await pool.query<{ last_position: number }>({ name: 'append', text: 'SELECT next_version, last_position FROM adcp_append_events($1, 0, $2::jsonb)', values: [stream, JSON.stringify([event])] });
    queue.push({ key: stream, value: JSON.stringify({ ...event, position: Number(rows[0]!.last_position) }) });
    wake?.();
    return { media_buy_id: id, buyer_ref: body.buyer_ref, status: 'active', packages: body.packages };
  });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  // The line the bench waits for, as a gateway logs it.
  process.stderr.write(`${JSON.stringify({ url: address, msg: 'adcp-gateway listening' })}\n`);
  process.once('SIGTERM', () => {
    stopped = true;
    wake?.();
    void (async () => {
      await app.close();
      await relay.catch(() => {});
      await producer.disconnect();
      await pool.end();
      process.exit(0);
    })();
  });
}

void main().catch((err: unknown) => {
  process.stderr.write(`${String((err as Error).stack ?? err)}\n`);
  process.exit(1);
});
