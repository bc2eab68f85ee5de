import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { promisify } from 'node:util';
import { issueApiKey } from '../../src/application/api-keys';
import { signBytes, type SignatureAlgorithm } from '../../src/signing/webhook-signer';
import { ADCP_BIN, problemsOf, runStoryboards } from '../support/adcp-runner';
import { ROOT, startTestGateway } from '../support/gateway';
import { KAFKA_BROKERS, PG_ADMIN_URL, createTestDatabase, describeWith } from '../support/infra';
import { runStoryboardWithJwks } from '../support/sdk-storyboard';

const run = promisify(execFile);

/**
 * The official AdCP storyboard runner (`adcp` from @adcp/sdk 6.11.0, AdCP 3.0.6) against a fresh
 * gateway, storyboard by storyboard, each as a new buyer (several assume a fresh principal: fixed
 * idempotency keys, "the accounts I synced are all there is"). The runner exits 0 even when steps
 * fail: each test judges its summary and report (problemsOf), and prints what broke.
 */
const STORYBOARDS = [
  'capability_discovery',
  'deterministic_testing',
  'error_compliance',
  'idempotency',
  'schema_validation',
  'security_baseline',
  'v3_envelope_integrity',
  'webhook_emission',
  'pagination_integrity',
  'pagination_integrity_creative_formats',
  'pagination_integrity_list_accounts',
  'get_media_buys_pagination_integrity',
  'media_buy_seller',
  'media_buy_seller/create_media_buy_async',
  'media_buy_seller/creative_fate_after_cancellation',
  'media_buy_seller/delivery_reporting',
  'media_buy_seller/invalid_transitions',
  'media_buy_seller/inventory_list_no_match',
  'media_buy_seller/inventory_list_targeting',
  'media_buy_seller/pending_creatives_to_start',
  'media_buy_seller/refine_products',
  'media_buy_state_machine',
  'sales_non_guaranteed',
  'sales_guaranteed',
  'creative_sales_agent',
  'audience_sync',
  'sales_social',
  'governance_aware_seller',
  'media_buy_seller/governance_approved',
  'media_buy_seller/governance_conditions',
  'media_buy_seller/governance_denied',
  'media_buy_seller/governance_denied_recovery',
  'governance_spend_authority',
  'governance_spend_authority/denied',
  'sales_catalog_driven',
];

/**
 * The storyboards describe two kinds of seller that no single configuration can be: the same
 * guaranteed create (same products, budgets and account) must wait for a human IO signature in
 * sales_guaranteed and be confirmed in the answer in creative_generative/seller. Sellers differ in
 * exactly this, so each storyboard runs against the seller it describes: the default approval
 * rules (a product flagged requires_approval, or a budget over the catalog's threshold, waits for
 * the seller) for the list above, and a seller that confirms every order at once
 * (APPROVAL_POLICY=never) for these.
 */
const CONFIRMING_SELLER_STORYBOARDS = [
  'sales_broadcast_tv',
  'creative_generative/seller',
  'media_buy_seller/measurement_terms_rejected',
  // Proposal mode bundles measurement_terms_rejected: the same seller.
  'media_buy_seller/proposal_finalize',
  'sales_proposal_mode',
  // Their creates are expected to confirm at once (a media_buy_id to monitor, or to report to governance).
  'governance_delivery_monitor',
  'media_buy_governance_escalation',
];

/**
 * Governance storyboards register "the buyer's governance agent" as `$context.governance_agent_url`,
 * which the CLI cannot set (adcontextprotocol/adcp#3913): they run through the SDK's runner
 * programmatically, with this gateway's own governance agent as that URL (https, as the schema
 * requires; the gateway knows its own endpoint by host and asks it in-process).
 */
const GOVERNED = new Set([...STORYBOARDS, ...CONFIRMING_SELLER_STORYBOARDS].filter((id) => /governance/.test(id)));

/**
 * Over A2A (`--protocol a2a`, the agent's base URL, its card at /.well-known/agent-card.json):
 * the storyboards the MCP binding was first held to (the list above up to creative_sales_agent).
 */
const A2A_STORYBOARDS = STORYBOARDS.slice(0, STORYBOARDS.indexOf('creative_sales_agent') + 1);

type Protocol = 'mcp' | 'a2a';

const SELLERS: { seller: string; env: Record<string, string>; storyboards: readonly string[]; protocol: Protocol }[] = [
  { seller: 'approval rules', env: {}, storyboards: STORYBOARDS, protocol: 'mcp' },
  { seller: 'APPROVAL_POLICY=never', env: { APPROVAL_POLICY: 'never' }, storyboards: CONFIRMING_SELLER_STORYBOARDS, protocol: 'mcp' },
  { seller: 'approval rules, over A2A', env: {}, storyboards: A2A_STORYBOARDS, protocol: 'a2a' },
];

/**
 * Storyboards whose prerequisites say the caller already has an active account on the seller
 * (audience_sync: "the account must already exist and be active", and its first stateful step
 * lists accounts before any is made): the harness onboards the test kit's account first, as the
 * operator would have for a real buyer.
 */
const ONBOARDED: Readonly<Record<string, { brand: { domain: string }; operator: string }>> = {
  audience_sync: { brand: { domain: 'acmeoutdoor.example' }, operator: 'pinnacle-agency.example' },
};

/**
 * Inventory a storyboard buys without seeding or discovering it (governance_conditions buys
 * `outdoor_ctv_q2` and governance_delivery_monitor `sports_ctv_q2` at `cpm_guaranteed`, which no
 * fixture of theirs defines), and formats a storyboard syncs and previews as the seller's own
 * (creative_sales_agent's `native_post`): the harness seeds them in the buyer's sandbox first, as
 * the seller's inventory and formats the storyboards presume.
 */
const PRESEEDED: Readonly<Record<string, Record<string, unknown>[]>> = {
  'media_buy_seller/governance_conditions': [
    {
      scenario: 'seed_product',
      params: {
        product_id: 'outdoor_ctv_q2',
        fixture: { delivery_type: 'guaranteed', channels: ['ctv'], format_ids: [{ id: 'video_30s' }], pricing_options: [{ pricing_option_id: 'cpm_standard', pricing_model: 'cpm', currency: 'USD', fixed_price: 30 }] },
      },
    },
  ],
  sales_catalog_driven: [
    {
      scenario: 'seed_product',
      params: {
        product_id: 'local_display_dynamic',
        fixture: { delivery_type: 'non_guaranteed', channels: ['display'], format_ids: [{ id: 'display_300x250' }], pricing_options: [{ pricing_option_id: 'cpm_standard', pricing_model: 'cpm', currency: 'USD', fixed_price: 9 }] },
      },
    },
  ],
  // A publisher's native post format, which the storyboard syncs and previews under a placeholder
  // agent; the demo catalog has none (sync_creatives and preview_creative take a format by one
  // rule: one the seller lacks is refused by both).
  creative_sales_agent: [
    {
      scenario: 'seed_creative_format',
      params: {
        format_id: 'native_post',
        fixture: {
          name: 'Native post',
          type: 'native',
          assets: [
            { asset_id: 'headline', asset_type: 'text', required: true },
            { asset_id: 'body', asset_type: 'text', required: false },
            { asset_id: 'image', asset_type: 'image', required: true, requirements: { min_width: 1200, max_width: 1200, min_height: 628, max_height: 628 } },
            { asset_id: 'click_url', asset_type: 'url', required: false },
          ],
        },
      },
    },
  ],
  governance_delivery_monitor: [
    {
      scenario: 'seed_product',
      params: {
        product_id: 'sports_ctv_q2',
        fixture: { delivery_type: 'guaranteed', channels: ['ctv'], format_ids: [{ id: 'video_30s' }], pricing_options: [{ pricing_option_id: 'cpm_guaranteed', pricing_model: 'cpm', currency: 'USD', fixed_price: 45 }] },
      },
    },
  ],
};

/** Storyboards whose steps wait for webhooks (the receiver's retry window is 90 s). */
const WITH_WEBHOOKS = new Set(['webhook_emission', 'idempotency', 'sales_broadcast_tv']);

/**
 * Steps whose runner contract no runner here implements: webhook signatures (the CLI takes no
 * JWKS; the programmatic run below checks them), and catalog-macro substitution safety (the
 * substitution_observer_runner contract, which @adcp/sdk 6.11 does not implement; the same
 * vectors run against our substitution in test/unit/creative/substitution.test.ts).
 */
const CHECKED_ELSEWHERE = { expect_webhook_signature_valid: 'unsatisfied_contract', expect_substitution_safe: 'unsatisfied_contract' };

function storyboardSuite(engine: string, envFor: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>): void {
  for (const { seller, env, storyboards, protocol } of SELLERS) sellerSuite(`${engine}, ${seller}`, storyboards, protocol, async () => {
    const setup = await envFor();
    return { env: { ...setup.env, ...env }, cleanup: setup.cleanup };
  });
}

function sellerSuite(name: string, storyboards: readonly string[], protocol: Protocol, envFor: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>): void {
  describe(`official storyboard runner (${name})`, () => {
    let gw: Awaited<ReturnType<typeof startTestGateway>>;
    let cleanup: () => Promise<void>;
    let tools: Set<string>;

    // MCP at its endpoint; A2A at the agent's base URL (the runner finds the card there).
    const agentUrl = () => (protocol === 'a2a' ? gw.url : `${gw.url}/mcp`);
    const freshBuyer = async () => {
      const { key } = await issueApiKey(gw.app.store, { org: `buyer-${randomBytes(4).toString('hex')}`, role: 'buyer' }, { now: new Date().toISOString() });
      // Keys are read from a projection: on PostgreSQL + Kafka it may trail the append a little.
      await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
      return key;
    };

    beforeAll(async () => {
      const setup = await envFor();
      cleanup = setup.cleanup;
      // Loopback webhooks for the runner's receiver; a quick simulated seller for sandbox IO approvals.
      gw = await startTestGateway({ ALLOW_PRIVATE_WEBHOOK_URLS: '1', SANDBOX_APPROVAL_DELAY_MS: '500', ...setup.env });
      const res = await fetch(`${gw.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${await freshBuyer()}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      tools = new Set(((await res.json()) as { result: { tools: { name: string }[] } }).result.tools.map((t) => t.name));
    }, 120_000);
    afterAll(async () => {
      await gw?.stop();
      await cleanup?.();
    });

    // The same agent declares the same specialisms on both transports; the MCP suites prove them.
    if (protocol === 'mcp') {
      it('declares exactly the specialisms whose storyboards this suite runs against it', async () => {
        const res = await fetch(`${gw.url}/mcp`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${await freshBuyer()}` },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_adcp_capabilities', arguments: {} } }),
        });
        const declared = (((await res.json()) as { result: { structuredContent: { specialisms?: string[] } } }).result.structuredContent.specialisms ?? []);
        const bundles = path.join(ROOT, 'node_modules', '@adcp', 'sdk', 'compliance', 'cache', '3.0.6', 'specialisms');
        const unproven = declared.flatMap((specialism) =>
          fs
            .readdirSync(path.join(bundles, specialism))
            .filter((f) => f.endsWith('.yaml'))
            .map((f) => /^id:\s*"?([^"\n]+)"?\s*$/m.exec(fs.readFileSync(path.join(bundles, specialism, f), 'utf8'))![1]!)
            .filter((id) => !storyboards.includes(id)),
        );
        expect({ declared: declared.length > 0, unproven }).toEqual({ declared: true, unproven: [] });
      });
    }

    for (const id of storyboards) {
      it(
        `${id}: no failed step, no step skipped that the agent declares`,
        async () => {
          const token = await freshBuyer();
          if (Object.hasOwn(ONBOARDED, id)) {
            const res = await fetch(`${gw.url}/mcp`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${token}` },
              body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'sync_accounts', arguments: { idempotency_key: `onboard-${randomBytes(8).toString('hex')}`, accounts: [{ ...ONBOARDED[id], billing: 'operator' }] } } }),
            });
            expect(((await res.json()) as { result: { isError?: boolean } }).result.isError).toBeFalsy();
            await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
          }
          for (const args of PRESEEDED[id] ?? []) {
            const res = await fetch(`${gw.url}/mcp`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${token}` },
              body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'comply_test_controller', arguments: args } }),
            });
            expect(((await res.json()) as { result: { isError?: boolean } }).result.isError).toBeFalsy();
          }
          if (GOVERNED.has(id)) {
            const governanceAgentUrl = `https://${new URL(gw.url).host}/mcp`;
            const result = await runStoryboardWithJwks({ agentUrl: agentUrl(), token, storyboard: id, protocol, context: { governance_agent_url: governanceAgentUrl } });
            const notPassed = result.steps.filter((s) => !s.passed || s.skipped).map((s) => `${s.step} (${s.task}): ${s.skipped ? `skipped ${s.skip_reason}` : s.details}`);
            expect({ storyboard: id, notPassed, ran: result.passed > 0 }).toEqual({ storyboard: id, notPassed: [], ran: true });
            return;
          }
          const result = await runStoryboards({ agentUrl: agentUrl(), token, storyboards: id, webhookReceiver: WITH_WEBHOOKS.has(id), protocol });
          const problems = problemsOf(result, tools, CHECKED_ELSEWHERE);
          expect({ storyboard: id, summary: { passed: result.summary.passed, failed: result.summary.failed, skipped: result.summary.skipped }, problems }).toEqual({
            storyboard: id,
            summary: expect.objectContaining({ failed: 0 }),
            problems: [],
          });
        },
        300_000,
      );
    }
  });
}

storyboardSuite('SQLite', async () => ({ env: {}, cleanup: async () => {} }));

describeWith('PostgreSQL and Kafka', !!PG_ADMIN_URL && !!KAFKA_BROKERS, 'storyboards on PostgreSQL + Kafka', () => {
  storyboardSuite('PostgreSQL + Kafka', async () => {
    const db = await createTestDatabase('adcp_runner');
    return { env: { EVENT_STORE_URL: db.url, KAFKA_BROKERS: KAFKA_BROKERS!, KAFKA_TOPIC: `adcp.events.runner-${randomBytes(4).toString('hex')}` }, cleanup: db.drop };
  });
});

/**
 * What the CLI cannot check: the RFC 9421 signatures on our webhooks, verified by the SDK's
 * runner against our published JWKS; and our signer graded by `adcp grade signer` through a
 * signing oracle that signs with the gateway's own key and code.
 */
describe('webhook signatures and the signer, graded by @adcp/sdk', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let oracle: http.Server;

  beforeAll(async () => {
    gw = await startTestGateway({ ALLOW_PRIVATE_WEBHOOK_URLS: '1', SANDBOX_APPROVAL_DELAY_MS: '500' });
    // The grader's signing oracle: {payload_b64, kid, alg} → {signature_b64}, with our key and code.
    oracle = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        const { payload_b64, kid, alg } = JSON.parse(body) as { payload_b64: string; kid: string; alg: SignatureAlgorithm };
        const key = gw.app.signingKeys.activeKey();
        if (kid !== key.kid || alg !== key.alg) return res.writeHead(400).end('{"error":"unknown key"}');
        const signature = signBytes(alg, Buffer.from(payload_b64, 'base64'), key.privateKey);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ signature_b64: signature.toString('base64') }));
      });
    });
    await new Promise<void>((r) => oracle.listen(0, '127.0.0.1', r));
  });
  afterAll(async () => {
    await new Promise((r) => oracle?.close(r));
    await gw?.stop();
  });

  it('webhook_emission with signature checks: every webhook verifies against our JWKS under adcp/webhook-signing/v1', async () => {
    const token = (await issueApiKey(gw.app.store, { org: 'signed-webhooks', role: 'buyer' }, { now: new Date().toISOString() })).key;
    const jwks = ((await (await fetch(`${gw.url}/.well-known/jwks.json`)).json()) as { keys: Record<string, unknown>[] }).keys;
    const result = await runStoryboardWithJwks({ agentUrl: `${gw.url}/mcp`, token, storyboard: 'webhook_emission', jwks });
    const signature = result.steps.filter((s) => s.task === 'expect_webhook_signature_valid');
    expect({ failed: result.failed, signature: signature.map((s) => ({ passed: s.passed, skipped: s.skipped ?? false })) }).toEqual({ failed: 0, signature: [{ passed: true, skipped: false }] });
    // The same check fails against a key that is not ours: it is a real verification.
    const { generateKeyPairSync } = await import('node:crypto');
    const other = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
    const forged = await runStoryboardWithJwks({ agentUrl: `${gw.url}/mcp`, token, storyboard: 'webhook_emission', jwks: jwks.map((k) => ({ ...k, x: other.x })), skipPhases: ['idempotency_key_stability'] });
    expect(forged.steps.find((s) => s.task === 'expect_webhook_signature_valid')).toMatchObject({ passed: false });
  }, 600_000);

  it('adcp grade signer: a signature from our signer verifies against our JWKS', async () => {
    const key = gw.app.signingKeys.activeKey();
    const oracleUrl = `http://127.0.0.1:${(oracle.address() as { port: number }).port}/sign`;
    const args = [ADCP_BIN, 'grade', 'signer', `${gw.url}/mcp`, '--signer-url', oracleUrl, '--kid', key.kid, '--alg', key.alg, '--jwks-url', `${gw.url}/.well-known/jwks.json`, '--allow-http', '--json'];
    const { stdout } = await run(process.execPath, args, { env: { PATH: process.env.PATH ?? '' } });
    expect(JSON.parse(stdout)).toMatchObject({ passed: true, kid: key.kid, step: { status: 'pass' } });
  }, 60_000);
});

/**
 * Incoming request signatures, graded by @adcp/sdk as the signed-requests test kit
 * (test-kits/signed-requests-runner.yaml) sets them up: the runner's test keys registered for a
 * buyer organisation, test-revoked-2026 revoked, a per-keyid cap of 100, create_media_buy
 * required signed. Each grading fills that key's nonce cap for the signatures' window, so each
 * gets a gateway of its own.
 */
describe('request signing (RFC 9421), graded by @adcp/sdk', () => {
  const signersFile = (): string => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adcp-signers-'));
    const kit = path.join(ROOT, 'node_modules', '@adcp', 'sdk', 'compliance', 'cache', '3.0.6', 'test-vectors', 'request-signing', 'keys.json');
    const keys = (JSON.parse(fs.readFileSync(kit, 'utf8')) as { keys: Record<string, unknown>[] }).keys;
    const file = path.join(dir, 'signers.json');
    fs.writeFileSync(file, JSON.stringify({ covers_content_digest: 'either', required_for: ['create_media_buy'], per_keyid_cap: 100, signers: [{ org: 'conformance-runner', jwks: { keys }, revoked_kids: ['test-revoked-2026'] }] }));
    return file;
  };
  const gateways: Awaited<ReturnType<typeof startTestGateway>>[] = [];
  const gateway = async () => {
    const gw = await startTestGateway({ REQUEST_SIGNERS_FILE: signersFile() });
    gateways.push(gw);
    return gw;
  };
  afterAll(async () => {
    for (const gw of gateways) await gw.stop();
  });

  it('signed_requests storyboard, probes over MCP: no failed step', async () => {
    const gw = await gateway();
    const token = (await issueApiKey(gw.app.store, { org: 'conformance-runner', role: 'buyer' }, { now: new Date().toISOString() })).key;
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
    // Three vectors no agent passes through SDK 6.11's storyboard path (test/conformance/signing
    // runs all three against our verifier): 007 and 018 assume covers_content_digest 'required'
    // and 'forbidden' (018 is byte for byte positive 002), and the storyboard path, unlike
    // `adcp grade`, does not apply the agent's declared policy; 025's key cannot be presented to
    // a black box, so the SDK grades it on its own library verifier and then asks the step for an
    // HTTP 401 from a probe that never left the runner (status 0).
    const skipVectors = ['007-missing-content-digest', '018-digest-covered-when-forbidden', '025-jwk-alg-crv-mismatch'];
    const result = await runStoryboardWithJwks({ agentUrl: `${gw.url}/mcp`, token, storyboard: 'signed_requests', requestSigning: { transport: 'mcp', skipVectors } });
    const failed = result.steps.filter((s) => !s.passed && !s.skipped).map((s) => `${s.step}: ${s.details}`);
    expect({ failed, ran: result.passed }).toEqual({ failed: [], ran: expect.any(Number) });
    // The rest ran, not skipped (4 URL-edge positives and the non-ASCII host cannot travel
    // through one MCP endpoint).
    expect(result.passed).toBeGreaterThanOrEqual(30);
  }, 300_000);

  it('adcp grade request-signing --transport mcp: passes', async () => {
    const gw = await gateway();
    const args = [ADCP_BIN, 'grade', 'request-signing', `${gw.url}/mcp`, '--allow-http', '--transport', 'mcp', '--covers-content-digest', 'either', '--json'];
    const { stdout } = await run(process.execPath, args, { env: { PATH: process.env.PATH ?? '' }, maxBuffer: 16 * 1024 * 1024 });
    const report = JSON.parse(stdout) as { passed: boolean; passed_count: number; failed_count: number };
    expect(report).toMatchObject({ passed: true, failed_count: 0 });
    expect(report.passed_count).toBeGreaterThanOrEqual(30);
  }, 120_000);
});
