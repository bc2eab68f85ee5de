import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { issueApiKey } from '../application/api-keys';
import { openEventStore } from '../app';
import { loadConfig, type Config } from '../config';
import type { EventStore } from '../eventstore/port';
import { SdkStoryboardRunner, type StoryboardOutcome } from './sdk-runner';
import { DEFAULT_STORYBOARDS, LEFT_OUT, ONBOARDED, PRESEEDED, needsGovernanceAgent } from './storyboards';

export const CONFORMANCE_USAGE = `usage: adcp-gateway conformance [--url <gateway>] [--protocol mcp|a2a] [--storyboards a,b,c] [--token <key>] [--json]

Runs the official AdCP storyboard runner (@adcp/sdk 6.11, AdCP 3.0.6, its storyboards re-dated so
their flights are in the future) against a running gateway, as a buyer would, one storyboard at a
time, and prints a line per storyboard and a summary. Exits 1 if any storyboard failed.

  --url <gateway>        the gateway's base URL (default http://127.0.0.1:$PORT, from the same
                         configuration as \`serve\`)
  --protocol mcp|a2a     the transport: MCP at <gateway>/mcp (default) or A2A at <gateway>
  --storyboards a,b,c    storyboard ids (default: every storyboard that applies to a media-buy seller)
  --token <key>          a buyer key of that gateway: every storyboard runs as that one buyer (for a
                         gateway whose store this command cannot open). Without it, each storyboard
                         runs as a fresh buyer whose key is issued, as \`keys create\` does, in the
                         configured store (DATA_DIR or EVENT_STORE_URL): run it beside the gateway,
                         with the gateway's configuration
  --json                 print the whole result as one JSON document instead

The governance storyboards get the gateway's own governance agent (<gateway>/mcp, as https) as the
buyer's; webhook signatures are checked against the gateway's /.well-known/jwks.json. The runner receives webhooks on loopback: start the gateway with
ALLOW_PRIVATE_WEBHOOK_URLS=1 for the webhook steps. Left out, and why:
${Object.entries(LEFT_OUT)
  .map(([id, why]) => `  ${id}: ${why}`)
  .join('\n')}
and the storyboards of protocols and specialisms the agent does not declare (brand, signals,
sponsored intelligence, creative agents, property lists, content standards, collection lists).
See docs/conformance.md.`;

export class ConformanceUsageError extends Error {}

export interface ConformanceResult {
  url: string;
  protocol: 'mcp' | 'a2a';
  agent_url: string;
  /** "fresh" (a new key per storyboard, issued in the configured store) or "token" (--token). */
  buyer: 'fresh' | 'token';
  storyboards: StoryboardOutcome[];
  summary: { storyboards: number; passed: number; failed: number; skipped: number };
}

interface Out {
  stdout: (s: string) => void;
  stderr: (s: string) => void;
}

/** `adcp-gateway conformance …`: the exit code (0 all passed or skipped, 1 a failure, 2 usage). */
export async function conformanceCommand(args: string[], out: Out = { stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) }, config?: () => Config): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      url: { type: 'string' },
      protocol: { type: 'string', default: 'mcp' },
      storyboards: { type: 'string' },
      token: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    out.stdout(CONFORMANCE_USAGE + '\n');
    return 0;
  }
  const protocol = values.protocol;
  if (protocol !== 'mcp' && protocol !== 'a2a') throw new ConformanceUsageError(`conformance: --protocol must be mcp or a2a (got "${protocol}")`);
  const ids = values.storyboards === undefined ? [...DEFAULT_STORYBOARDS] : [...new Set(values.storyboards.split(',').map((s) => s.trim()).filter(Boolean))];
  if (ids.length === 0) throw new ConformanceUsageError('conformance: --storyboards names no storyboard');
  const getConfig = config ?? (() => loadConfig());
  const base = (values.url ?? `http://127.0.0.1:${getConfig().port}`).replace(/\/+$/, '');
  if (!URL.canParse(base) || !/^https?:$/.test(new URL(base).protocol)) throw new ConformanceUsageError(`conformance: --url must be an http(s) URL (got "${base}")`);
  const agentUrl = protocol === 'a2a' ? base : `${base}/mcp`;
  const log = (s: string) => (values.json ? out.stderr(s) : out.stdout(s));

  const runner = new SdkStoryboardRunner();
  let store: EventStore | undefined;
  try {
    const unknown = await runner.unknownIds(ids);
    if (unknown.length) throw new ConformanceUsageError(`conformance: no storyboard ${unknown.map((id) => `"${id}"`).join(', ')} in the bundled compliance tree (AdCP 3.0.6); \`npx adcp storyboard list\` lists them`);
    await reachable(base);

    let buyer: () => Promise<string>;
    if (values.token !== undefined) {
      const token = values.token;
      out.stderr(`every storyboard runs as the one buyer of --token; storyboards that assume a fresh buyer (fixed idempotency keys, "the accounts I synced are all there is") may fail for that reason alone\n`);
      buyer = async () => token;
    } else {
      const cfg = getConfig();
      store = await openEventStore(cfg);
      const s = store;
      buyer = () => freshBuyer(s, base, cfg);
    }

    // The keys the gateway publishes for its webhook signatures, as a buyer verifies them.
    const jwks = await publishedJwks(base);
    log(`${ids.length} storyboards against ${agentUrl} over ${protocol.toUpperCase()}, ${values.token !== undefined ? 'as the buyer of --token' : 'each as a fresh buyer'}\n`);
    const outcomes: StoryboardOutcome[] = [];
    for (const id of ids) {
      let outcome: StoryboardOutcome;
      try {
        const token = await buyer();
        await prepare(base, token, id);
        const context = needsGovernanceAgent(id) ? { governance_agent_url: ownGovernanceAgent(base) } : undefined;
        outcome = await runner.run({ storyboard: id, agentUrl, token, protocol, ...(context ? { context } : {}), ...(jwks ? { jwks } : {}) });
      } catch (err) {
        if (err instanceof GatewayError) throw err;
        outcome = { storyboard: id, status: 'failed', passed: 0, failed: 0, skipped: 0, steps: [], failures: [{ step: '(setup)', reason: (err as Error).message }] };
      }
      outcomes.push(outcome);
      log(formatLine(outcome) + '\n');
    }
    const summary = {
      storyboards: outcomes.length,
      passed: outcomes.filter((o) => o.status === 'passed').length,
      failed: outcomes.filter((o) => o.status === 'failed').length,
      skipped: outcomes.filter((o) => o.status === 'skipped').length,
    };
    const line = `${summary.storyboards} storyboards: ${summary.passed} passed, ${summary.failed} failed, ${summary.skipped} skipped`;
    // The runner hosts its webhook receiver on loopback, which a gateway refuses by default.
    if (outcomes.some((o) => o.failures.some((f) => /webhook URL (must use https|points at a non-public address)/.test(f.reason)))) {
      out.stderr(`note: some steps failed because the gateway refused the runner's loopback webhook receiver; start the gateway with ALLOW_PRIVATE_WEBHOOK_URLS=1 to run them\n`);
    }
    if (values.json) {
      const result: ConformanceResult = { url: base, protocol, agent_url: agentUrl, buyer: values.token !== undefined ? 'token' : 'fresh', storyboards: outcomes, summary };
      out.stdout(JSON.stringify(result, null, 2) + '\n');
      out.stderr(line + '\n');
    } else out.stdout(line + '\n');
    return summary.failed > 0 ? 1 : 0;
  } catch (err) {
    if (err instanceof GatewayError) {
      out.stderr(`adcp-gateway: ${err.message}\n`);
      return 1;
    }
    throw err;
  } finally {
    runner.close();
    await store?.close();
  }
}

/** The gateway cannot be used as asked (unreachable, or it does not know the issued key). */
class GatewayError extends Error {}

/** `PASSED   id  12 passed, 0 failed, 1 skipped` and, for a failure, each failed step and why. */
export function formatLine(o: StoryboardOutcome): string {
  const head = `${o.status.toUpperCase().padEnd(7)}  ${o.storyboard}  ${o.passed} passed, ${o.failed} failed, ${o.skipped} skipped`;
  if (o.status !== 'failed') return head;
  return `${head}: ${o.failures.map((f) => `${f.step}: ${f.reason}`).join('; ')}`;
}

async function reachable(base: string): Promise<void> {
  try {
    const res = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`GET /healthz answered ${res.status}`);
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    const why = e.cause?.code ?? e.message;
    throw new GatewayError(`cannot reach the gateway at ${base} (${why}): start it (\`adcp-gateway serve\`) or pass --url`);
  }
}

async function publishedJwks(base: string): Promise<Record<string, unknown>[] | undefined> {
  try {
    const res = await fetch(`${base}/.well-known/jwks.json`, { signal: AbortSignal.timeout(10_000) });
    const keys = res.ok ? ((await res.json()) as { keys?: unknown }).keys : undefined;
    return Array.isArray(keys) && keys.length > 0 ? (keys as Record<string, unknown>[]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A new buyer key, issued in the configured store, once the gateway has read it: its api-keys
 * read model must have passed the append (GET /readyz shows each projection's position). Waiting
 * on /readyz, not on a 401 turning into 200, keeps the run from counting as failed authentications.
 */
async function freshBuyer(store: EventStore, base: string, config: Config): Promise<string> {
  const issued = await issueApiKey(store, { org: `conformance-${randomBytes(4).toString('hex')}`, role: 'buyer' }, { now: new Date().toISOString(), principal: 'cli' });
  // The head once the key is in: at or past its position.
  const position = await store.headPosition();
  const deadline = Date.now() + 15_000;
  for (;;) {
    const res = await fetch(`${base}/readyz`).catch(() => undefined);
    const body = res ? ((await res.json().catch(() => ({}))) as { projections?: { name: string; position: number }[] }) : {};
    const seen = body.projections?.find((p) => p.name === 'api-keys')?.position ?? 0;
    if (seen >= position) break;
    if (Date.now() > deadline) throw new GatewayError(`the gateway at ${base} has not read the buyer key issued in ${storeOf(config)} within 15 s: ${SAME_STORE}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  // Positions say nothing across two stores: the gateway must also know the key.
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${issued.key}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  await res.arrayBuffer();
  if (res.status === 401) throw new GatewayError(`the gateway at ${base} does not know the buyer key issued in ${storeOf(config)}: ${SAME_STORE}`);
  return issued.key;
}

const SAME_STORE = "run this command with the gateway's own configuration, or pass --token <a buyer key of that gateway>";

function storeOf(config: Config): string {
  return config.eventStore.kind === 'sqlite' ? `DATA_DIR ${config.dataDir}` : `the ${config.eventStore.kind} store of EVENT_STORE_URL`;
}

/** What a storyboard presumes the buyer already has: an onboarded account, seeded inventory. */
async function prepare(base: string, token: string, id: string): Promise<void> {
  const onboarding = ONBOARDED[id];
  if (onboarding) {
    await mcpTool(base, token, 'sync_accounts', { idempotency_key: `onboard-${randomBytes(8).toString('hex')}`, accounts: [{ ...onboarding, billing: 'operator' }] }, `onboarding ${id}'s account`);
  }
  for (const args of PRESEEDED[id] ?? []) await mcpTool(base, token, 'comply_test_controller', args, `seeding ${id}'s inventory`);
}

async function mcpTool(base: string, token: string, name: string, args: Record<string, unknown>, what: string): Promise<void> {
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  });
  const body = (await res.json().catch(() => ({}))) as { result?: { isError?: boolean; content?: { text?: string }[] }; error?: { message?: string } };
  if (!res.ok || body.error || body.result?.isError) {
    throw new Error(`${what} (${name}) failed: ${res.status} ${(body.error?.message ?? body.result?.content?.[0]?.text ?? '').slice(0, 200)}`);
  }
}

/**
 * The gateway's own governance agent, as the buyer's: its MCP endpoint, as https (the schema
 * requires it). The gateway knows its own endpoint by host and asks it in-process.
 */
export function ownGovernanceAgent(base: string): string {
  return `https://${new URL(base).host}/mcp`;
}
