import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { KAFKA_BROKERS, PG_ADMIN_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { BIN, ROOT, graphql, spawnGateway, tempDir } from '../support/gateway';

const run = promisify(execFile);

describeWith('PostgreSQL and Kafka', !!PG_ADMIN_URL && !!KAFKA_BROKERS, 'server mode: PostgreSQL event store + Kafka bus', () => {
  it('publishes an event appended through GraphQL to a Kafka consumer group', async () => {
    const db = await createTestDatabase();
    const topic = `adcp.events.it-${randomBytes(4).toString('hex')}`;
    const env = { DATA_DIR: tempDir(), EVENT_STORE_URL: db.url, KAFKA_BROKERS: KAFKA_BROKERS!, KAFKA_TOPIC: topic };
    const consumer = new Kafka({ clientId: 'it', brokers: KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING }).consumer({
      groupId: `it-${randomBytes(4).toString('hex')}`,
    });
    const gw = await spawnGateway(env, 60_000);
    try {
      const admin = (await run(process.execPath, [BIN, 'keys', 'create', '--org', 'ops', '--role', 'admin'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } })).stdout.trim();
      await eventually(async () => (await graphql(gw.url, '{ __typename }', undefined, admin)).status === 200, 20_000, 'admin key');
      const status = await graphql(gw.url, '{ eventLog { store bus } }');
      expect(status.body.data!.eventLog).toEqual({ store: 'postgres', bus: 'kafka' });

      const issued = await graphql(gw.url, 'mutation { issueApiKey(input: {org: "kafka-seen"}) { keyId } }', undefined, admin);
      const keyId = issued.body.data!.issueApiKey.keyId as string;

      const seen: { key: string; type: string; data: { keyId: string; org: string } }[] = [];
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          const e = JSON.parse(message.value!.toString()) as { type: string; data: { keyId: string; org: string } };
          seen.push({ key: message.key!.toString(), type: message.headers!.type!.toString(), data: e.data });
        },
      });
      // Keys spread streams over partitions, so the two events may arrive in either order.
      await eventually(() => seen.some((s) => s.data.keyId === keyId) && seen.some((s) => s.data.org === 'ops'), 60_000, 'events on Kafka');
      expect(seen.find((s) => s.data.keyId === keyId)).toMatchObject({ key: `api-key-${keyId}`, type: 'ApiKeyIssued', data: { org: 'kafka-seen' } });
      // The key issued by the CLI (another process writing to the same PostgreSQL) was relayed too.
      expect(seen.filter((s) => s.data.org === 'ops')).toHaveLength(1);
    } finally {
      await consumer.disconnect();
      expect(await gw.stop()).toBe(0);
      await db.drop();
    }
  }, 120_000);
});
