import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { mcpCall } from '../support/mcp-call';
import type { AddressInfo } from 'node:net';
import { issueApiKey } from '../../src/application/api-keys';
import YAML from 'yaml';
import { runStoryboards } from '../support/adcp-runner';
import { startTestGateway } from '../support/gateway';
import { runStoryboardWithJwks } from '../support/sdk-storyboard';

/** The AdCP 3.1.18 storyboards (the repository's copy of the spec's compliance tree), or the folder ADCP_31_COMPLIANCE names. */
const COMPLIANCE_31 = process.env.ADCP_31_COMPLIANCE ?? path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'compliance', '3.1.18');

/**
 * The 3.1.18 universal storyboards the `@adcp/sdk` 6.11 runner (AdCP 3.0.6) can drive, run
 * through `ADCP_COMPLIANCE_DIR` against one gateway, each as a fresh buyer: by its CLI, as a user
 * would, but comply_controller_mode_gate, whose step authenticates with its test kit's key, which
 * only the library takes (the CLI never loads a storyboard's kit and sends no credentials). Every
 * step passes but those named here: each is the 3.0 runner's doing, shown by the request it sent
 * (recorded by a proxy between runner and gateway) rather than by the answer. The test fails if
 * any other step fails, and if a named one starts passing, so the list cannot go stale.
 */
const RUNNERS_OWN: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  read_tool_idempotency: {},
  comply_controller_mode_gate: {},
  webhook_emission: {
    // The sample has no flight dates; 6.11's create_media_buy enricher fills them from Date.now()
    // on each send, so the replay differs from the first call and a correct seller answers
    // IDEMPOTENCY_CONFLICT (checked below on the recorded requests).
    trigger_idempotent_webhook_replay: 'the runner re-dates the replayed create (Date.now()), so the payload differs',
    // 6.11's get_products enricher adds `brief` (a field the wholesale sample lacks): wholesale
    // with a brief is invalid, so the "accepted" branch fails; the seller accepts the sample as
    // written (the rejection branch receives products), so that branch fails too, and with both
    // the any_of assertion.
    sync_get_products_with_webhook_config_success: 'the runner adds a brief to a wholesale get_products',
    sync_get_products_with_webhook_config_reject: 'the branch for sellers that refuse; this one accepts the sample as written',
    assert_synchronous_completion_handled: 'follows the two above',
  },
};

type Json = Record<string, any>;

/** A recording reverse proxy: every JSON-RPC `tools/call` the runner sends, by tool, then passed on. */
async function recordingProxy(target: string) {
  const calls: { tool: string; args: Json; authorization?: string }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      try {
        const rpc = JSON.parse(body.toString('utf8')) as Json;
        if (rpc?.method === 'tools/call') calls.push({ tool: rpc.params?.name, args: rpc.params?.arguments ?? {}, authorization: req.headers.authorization });
      } catch {
        // not JSON-RPC: passed on as is
      }
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'content-length', 'connection'].includes(k))) as Record<string, string>;
      const upstream = await fetch(`${target}${req.url}`, { method: req.method, headers, body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body });
      const out = Buffer.from(await upstream.arrayBuffer());
      res.writeHead(upstream.status, Object.fromEntries([...upstream.headers].filter(([k]) => !['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(k))));
      res.end(out);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('AdCP 3.1.18 universal storyboards, @adcp/sdk 6.11 runner', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;

  const freshKey = async (org: string) => {
    const { key } = await issueApiKey(gw.app.store, { org: `${org}-${Date.now().toString(36)}`, role: 'buyer' }, { now: new Date().toISOString() });
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
    return key;
  };

  beforeAll(async () => {
    gw = await startTestGateway({ ALLOW_PRIVATE_WEBHOOK_URLS: '1', SANDBOX_APPROVAL_DELAY_MS: '500' });
    proxy = await recordingProxy(gw.url);
  }, 60_000);
  afterAll(async () => {
    await proxy?.close();
    await gw?.stop();
  });

  /** The CLI's run: the ids of its failed steps, and how many passed. */
  const failedThroughCli = async (id: string, token: string) => {
    const run = await runStoryboards({ agentUrl: `${proxy.url}/mcp`, token, storyboards: id, webhookReceiver: id === 'webhook_emission', complianceDir: COMPLIANCE_31 });
    return { ids: (run.summary.failures ?? []).map((f) => f.step_id), passed: run.summary.passed };
  };

  /**
   * The library's run with the storyboard's test kit: the live-mode kit names a placeholder key
   * ("an API key whose associated account resolves as live/production mode"), which the operator
   * provisions; here a key this gateway issued to a buyer whose one account is live.
   */
  const failedThroughLibrary = async (id: string, token: string) => {
    const kit = YAML.parse(fs.readFileSync(path.join(COMPLIANCE_31, 'test-kits', 'acme-outdoor-live.yaml'), 'utf8')) as Json;
    const liveKey = await freshKey('acme-outdoor-live');
    const synced = await mcpCall(gw.url, liveKey, 'sync_accounts', { accounts: [{ brand: { domain: 'acme-outdoor.com' }, operator: 'pinnacle-media.com', billing: 'operator' }], idempotency_key: randomUUID() });
    expect(synced.body.accounts?.[0]?.sandbox).not.toBe(true);
    const testKit = { ...kit, auth: { ...kit.auth, api_key: liveKey } };
    const run = await runStoryboardWithJwks({ agentUrl: `${proxy.url}/mcp`, token, storyboard: id, complianceDir: COMPLIANCE_31, testKit });
    // The step was sent with the kit's key, not the buyer's: the gate was what answered.
    expect(proxy.calls.filter((c) => c.tool === 'comply_test_controller' && c.authorization === `Bearer ${testKit.auth.api_key}`)).toHaveLength(1);
    return { ids: run.steps.filter((s) => !s.passed && !s.skipped).map((s) => s.step_id), passed: run.passed };
  };

  for (const [id, own] of Object.entries(RUNNERS_OWN)) {
    it(`${id}: every step passes but the runner's own (${Object.keys(own).length})`, async () => {
      proxy.calls.length = 0;
      const token = await freshKey(id);
      const failed = id === 'comply_controller_mode_gate' ? await failedThroughLibrary(id, token) : await failedThroughCli(id, token);
      expect({ id, failed: failed.ids.sort(), ran: failed.passed > 0 }).toEqual({ id, failed: Object.keys(own).sort(), ran: true });

      if (id === 'webhook_emission') {
        // The runner's replay is not the request it first sent: same key, other flight dates.
        const creates = proxy.calls.filter((c) => c.tool === 'create_media_buy' && c.args.push_notification_config?.operation_id === 'op_webhook_idempotency_replay');
        expect(creates).toHaveLength(2);
        expect(creates[0]!.args.idempotency_key).toBe(creates[1]!.args.idempotency_key);
        expect(creates[0]!.args.start_time).not.toBe(creates[1]!.args.start_time);
        // The "accepted" branch's wholesale request carries a brief the storyboard's sample does not.
        const wholesale = proxy.calls.filter((c) => c.tool === 'get_products' && c.args.push_notification_config?.operation_id === 'op_sync_get_products_no_webhook');
        expect(wholesale.map((c) => ({ mode: c.args.buying_mode, brief: typeof c.args.brief === 'string' }))).toContainEqual({ mode: 'wholesale', brief: true });
      }
    }, 300_000);
  }
});
