import { randomUUID } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import { validateAdcp3, validateAdcp3Response } from '../../src/wire/adcp3/schemas';
import { redatedComplianceDir } from '../../src/conformance/compliance-tree';
import { startTestGateway } from '../support/gateway';
import { mcpCall } from '../support/mcp-call';
import { startReceiver } from '../support/receiver';
import { answerProbes, makeFixtures, placeholderFiller, storyboardSamples, yamlFiles, type CorpusEntry } from '../support/answer-corpus';

type Json = Record<string, any>;

/** Tools the 3.0 manifest does not list, by their response schema. */
const OUTSIDE_MANIFEST: Readonly<Record<string, string>> = { tasks_get: 'core/tasks-get-response.json', 'tasks/get': 'core/tasks-get-response.json', tasks_list: 'core/tasks-list-response.json' };
const validateAnswer = (tool: string, body: unknown) => (Object.hasOwn(OUTSIDE_MANIFEST, tool) ? validateAdcp3(OUTSIDE_MANIFEST[tool]!, body) : validateAdcp3Response(tool, body));

/** Tools whose 3.0 response schema has an error arm: their error answers must validate as a whole. */
const ERROR_ARM = new Set(['create_media_buy', 'update_media_buy', 'sync_creatives', 'sync_accounts', 'sync_audiences', 'sync_catalogs', 'sync_event_sources', 'log_event', 'get_account_financials', 'provide_performance_feedback', 'build_creative']);

/**
 * Every answer of every task over MCP, success and error, checked against the AdCP 3.0 schemas
 * `@adcp/sdk` bundles: successes against the tool's response schema; errors by their `adcp_error`
 * and each `errors[]` item against `core/error.json` (and, for tools with an error arm, the whole
 * body against the response schema). The corpus: every storyboard `sample_request` for a tool the
 * agent has (placeholders filled from a buy, creative and task made here), and hand-made requests
 * that probe each tool's success and error paths.
 */
describe('MCP answers validate against the AdCP 3.0 schemas', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let buyer: string;
  let other: string;

  // This suite validates every answer itself (errors included): the helper's own check is off.
  const call = (name: string, args: unknown, key: string = buyer) => mcpCall(gw.url, key, name, args, { validate: false });

  beforeAll(async () => {
    gw = await startTestGateway({ ALLOW_PRIVATE_WEBHOOK_URLS: '1', SANDBOX_APPROVAL_DELAY_MS: '200' });
    receiver = await startReceiver();
    const ctx = { now: new Date().toISOString() };
    buyer = (await issueApiKey(gw.app.store, { org: 'schema-acme', role: 'buyer' }, ctx)).key;
    other = (await issueApiKey(gw.app.store, { org: 'schema-globex', role: 'buyer' }, ctx)).key;
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
  });
  afterAll(async () => {
    await receiver?.close();
    await gw?.stop();
  });

  it('100 % of at least 200 answers valid, successes and errors for every tool', async () => {
    const tools = new Set(
      ((await (await fetch(`${gw.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${buyer}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) })).json()) as Json).result.tools.map((t: { name: string }) => t.name) as string[],
    );
    // Fixtures the samples' placeholders name; the samples; the hand-made probes.
    const fx = await makeFixtures((tool, args, key) => call(tool, args, key), buyer);
    const fill = placeholderFiller(fx.context, () => `${receiver.origin}/hook/${randomUUID()}`);
    const corpus: CorpusEntry[] = storyboardSamples(yamlFiles(redatedComplianceDir()), tools, fill, (task) => task === 'comply_test_controller');
    const samples = corpus.length;
    corpus.push(...answerProbes(fx, other));

    const invalid: string[] = [];
    const seen = new Map<string, { ok: number; error: number }>();
    for (const { tool, args, key, source } of corpus) {
      const { isError, body } = await call(tool, args, key);
      const counted = tool === 'call_adcp_agent' ? (args as { task: string }).task : tool;
      const tally = seen.get(tool) ?? { ok: 0, error: 0 };
      tally[isError ? 'error' : 'ok']++;
      seen.set(tool, tally);
      const checks = isError
        ? [validateAdcp3('core/error.json', body.adcp_error), ...((body.errors ?? []) as unknown[]).map((e) => validateAdcp3('core/error.json', e)), ...(ERROR_ARM.has(counted) ? [validateAnswer(counted, body)] : [])]
        : [validateAnswer(counted, body)];
      if (isError && !body.adcp_error) invalid.push(`${tool} (${source}): an error without adcp_error`);
      for (const c of checks) if (!c.valid) invalid.push(`${tool} (${source}) ${c.schema}: ${c.errors.slice(0, 3).join('; ')} — sent ${JSON.stringify(body).slice(0, 300)}`);
    }
    expect(invalid.slice(0, 30)).toEqual([]);
    expect(samples).toBeGreaterThanOrEqual(60);
    expect(corpus.length).toBeGreaterThanOrEqual(200);
    // Every tool answered both ways somewhere in the corpus (capabilities cannot fail but on version).
    for (const tool of ['get_adcp_capabilities', 'get_products', 'list_creative_formats', 'create_media_buy', 'update_media_buy', 'get_media_buys', 'get_media_buy_delivery', 'sync_creatives', 'list_creatives', 'preview_creative', 'tasks_get', 'tasks_list', 'sync_accounts', 'sync_audiences', 'sync_catalogs', 'sync_event_sources', 'log_event', 'get_account_financials', 'provide_performance_feedback', 'build_creative']) {
      expect({ tool, ...seen.get(tool) }).toEqual({ tool, ok: expect.any(Number), error: expect.any(Number) });
      expect(seen.get(tool)!.ok).toBeGreaterThan(0);
      expect(seen.get(tool)!.error).toBeGreaterThan(0);
    }
  }, 180_000);
});
