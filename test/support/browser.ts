import fs from 'node:fs';
import path from 'node:path';
import { buildSchema, getNamedType, parse, TypeInfo, typeFromAST, validate, visit, visitWithTypeInfo, type GraphQLSchema, type GraphQLType, type NamedTypeNode } from 'graphql';
import { chromium, type Browser, type Page } from 'playwright-core';
import { REQUIRE_INFRA } from './infra';
import { issueApiKey } from '../../src/application/api-keys';
import { graphql, ROOT, startTestGateway } from './gateway';
import { eventually } from './infra';

type TestGateway = Awaited<ReturnType<typeof startTestGateway>>;

/** Debian's Chromium (apt package `chromium`), which CI installs; no browser is downloaded. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const HAS_CHROMIUM = fs.existsSync(CHROMIUM_PATH);

/** Screenshots of the browser tests, kept with the test output (docs/console.md shows some). */
export const SCREENSHOT_DIR = path.join(ROOT, 'test-output', 'screenshots');

/**
 * `describe` when Chromium is on the machine; else skipped, or a failing test under
 * REQUIRE_INFRA=1 (CI), so a missing browser never passes for a green run.
 */
export function describeInBrowser(name: string, fn: () => void): void {
  if (HAS_CHROMIUM) return describe(name, fn);
  if (REQUIRE_INFRA) {
    return describe(name, () => {
      it('needs Chromium', () => {
        throw new Error(`Chromium is required (REQUIRE_INFRA=1) but not found at ${CHROMIUM_PATH}`);
      });
    });
  }
  describe.skip(name, fn);
}

/**
 * Headless Chromium as the machine allows it: no sandbox (tests run as root), and none of the
 * background connections to Google's services this machine's closed network refuses.
 */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}

export function screenshotPath(name: string): string {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  return path.join(SCREENSHOT_DIR, `${name}.png`);
}

const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical findings on the page as it is now (none is the bar). */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the console's CSP (rightly) refuses an injected <script>.
  await page.evaluate(AXE);
  const found = (await page.evaluate('axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length })))')) as { id: string; impact: string; nodes: number }[];
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}, ${v.nodes} nodes)`);
}

/**
 * A new browser context on the console, signed in with `key`: pasted, or approved on the gateway's
 * own sign-in page (OAuth code + PKCE). Requests that leave the gateway's origin are pushed to
 * `foreign`, page errors to `pageErrors` (tests expect both empty at the end).
 */
export async function signedInPage(browser: Browser, gatewayUrl: string, key: string, opts: { width?: number; how?: 'key' | 'oauth'; foreign: string[]; pageErrors: string[] }): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: opts.width ?? 1200, height: 900 } });
  const page = await context.newPage();
  page.on('pageerror', (err) => opts.pageErrors.push(String(err)));
  recordGraphqlDocuments(page);
  page.on('request', (req) => {
    if (!req.url().startsWith(gatewayUrl) && !req.url().startsWith(gatewayUrl.replace(/^http/, 'ws'))) opts.foreign.push(req.url());
  });
  await page.goto(`${gatewayUrl}/`);
  if (new URL(page.url()).pathname !== '/app/') throw new Error(`/ should lead to /app/, not ${page.url()}`);
  if (opts.how === 'oauth') {
    await page.getByRole('button', { name: 'Sign in with the gateway' }).click();
    await page.waitForURL((u) => u.pathname === '/authorize');
    await page.getByLabel('Your API key').fill(key);
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL((u) => u.pathname === '/app/');
  } else {
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in with the key' }).click();
  }
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  return page;
}

/** Every GraphQL document the console sent in this test file: over POST /graphql and the WebSocket. */
export const consoleDocuments = new Set<string>();

function recordGraphqlDocuments(page: Page): void {
  page.on('request', (req) => {
    if (req.method() !== 'POST' || new URL(req.url()).pathname !== '/graphql') return;
    const query = (JSON.parse(req.postData() ?? '{}') as { query?: unknown }).query;
    if (typeof query === 'string') consoleDocuments.add(query);
  });
  page.on('websocket', (ws) =>
    ws.on('framesent', (frame) => {
      const message = JSON.parse(typeof frame.payload === 'string' ? frame.payload : frame.payload.toString('utf8')) as { type?: string; payload?: { query?: unknown } };
      if (message.type === 'subscribe' && typeof message.payload?.query === 'string') consoleDocuments.add(message.payload.query);
    }),
  );
}

let committedSchema: GraphQLSchema | undefined;

/**
 * Where the documents step outside the typed graph: a field whose type is the `JSONObject` scalar,
 * an argument or variable that takes one. Each document must also be valid against the committed
 * schema (schema/schema.graphql).
 */
export function untypedUses(documents: Iterable<string>): string[] {
  committedSchema ??= buildSchema(fs.readFileSync(path.join(ROOT, 'schema', 'schema.graphql'), 'utf8'));
  const schema = committedSchema;
  const found: string[] = [];
  const isJson = (type: GraphQLType | null | undefined) => !!type && getNamedType(type).name === 'JSONObject';
  for (const text of documents) {
    const doc = parse(text);
    for (const e of validate(schema, doc)) found.push(`invalid: ${e.message} in ${text.slice(0, 80)}`);
    const info = new TypeInfo(schema);
    visit(
      doc,
      visitWithTypeInfo(info, {
        Field(node) {
          if (isJson(info.getType())) found.push(`field ${node.name.value} answers JSONObject`);
        },
        Argument(node) {
          if (isJson(info.getArgument()?.type)) found.push(`argument ${node.name.value} takes JSONObject`);
        },
        VariableDefinition(node) {
          if (isJson(typeFromAST(schema, node.type as NamedTypeNode))) found.push(`variable $${node.variable.name.value} is JSONObject`);
        },
      }),
    );
  }
  return found;
}

/** A gateway for one browser test file: a buyer (org acme), a seller and an admin key, live, and Chromium. */
export interface ConsoleFixture {
  gw: TestGateway;
  browser: Browser;
  keys: { buyer: string; seller: string; admin: string };
  stop(): Promise<void>;
}

export async function startConsoleFixture(env: Record<string, string> = {}): Promise<ConsoleFixture> {
  const gw = await startTestGateway(env);
  const now = { now: new Date().toISOString() };
  const keys = {
    buyer: (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, now)).key,
    seller: (await issueApiKey(gw.app.store, { org: 'publisher', role: 'seller' }, now)).key,
    admin: (await issueApiKey(gw.app.store, { org: 'ops', role: 'admin' }, now)).key,
  };
  await eventually(async () => (await graphql(gw.url, '{ viewer { role } }', undefined, keys.admin)).body.data?.viewer?.role === 'admin', 20_000, 'the keys');
  const browser = await launchBrowser();
  return {
    gw,
    browser,
    keys,
    stop: async () => {
      await browser.close();
      await gw.stop();
    },
  };
}

/**
 * Waits until `expression` is truthy in the page. Polled through the DevTools protocol like
 * `page.evaluate`: Playwright's `waitForFunction` polls a string predicate with eval inside the
 * page, which the gateway's CSP (rightly) refuses once the first check comes back false.
 */
export async function waitForExpression(page: Page, expression: string, timeoutMs: number, what: string): Promise<void> {
  await eventually(async () => Boolean(await page.evaluate(expression)), timeoutMs, what);
}
