import { createHash } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { handleCommand } from '../../src/application/command-handler';
import { creativeDecider, creativeStream, type CreativeContent } from '../../src/domain/creative/creative';
import { startTestGateway } from '../support/gateway';
import { type ConsoleFixture, describeInBrowser, signedInPage, startConsoleFixture } from '../support/browser';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

const AGENT = 'https://creative.adcontextprotocol.org';

/**
 * Defence in depth behind the API's refusal of non-http(s) URLs (issue 32, finding 5): a creative
 * whose file URL is `javascript:` (stored before the API refused it) shows its URL as text; only
 * http(s) URLs become links.
 */
describeInBrowser('the console in Chromium: only http(s) URLs become links', () => {
  let gw: Gateway;
  let browser: Browser;
  let buyer: string;
  const foreign: string[] = [];
  const pageErrors: string[] = [];

  /** A creative in the buyer's library as an older gateway could have stored it (no input check). */
  const storedCreative = async (id: string, url: string) => {
    const now = new Date().toISOString();
    const content: CreativeContent = { creative_id: id, owner: 'acme', name: id, format_id: { agent_url: AGENT, id: 'display_300x250' }, format_type: 'display', assets: { image: { url, width: 300, height: 250 } }, assigned_to: [] };
    const hash = createHash('sha256').update(JSON.stringify(content)).digest('hex');
    await handleCommand(gw.app.store, creativeStream('acme', id), creativeDecider, { type: 'SyncCreative', content, hash, now }, { now, principal: 'test', correlationId: 'console-links' });
  };

  let fixture: ConsoleFixture;
  beforeAll(async () => {
    fixture = await startConsoleFixture();
    ({ gw, browser } = fixture);
    ({ buyer } = fixture.keys);
    await storedCreative('legacy-js', 'javascript:alert(document.domain)');
    await storedCreative('legacy-data', 'data:text/html,<script>alert(1)</script>');
    await storedCreative('plain-https', 'https://cdn.acme.example/mpu.png');
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
  }, 60_000);
  afterAll(() => fixture?.stop());

  it('the creative library links the https file and shows the javascript: and data: ones as text', async () => {
    const page = await signedInPage(browser, gw.url, buyer, { foreign, pageErrors });
    await page.goto(`${gw.url}/app/#/webhooks`);
    const card = (id: string) => page.locator('section[aria-labelledby="library-title"] li.card', { hasText: id });
    await card('plain-https').waitFor();
    expect(await card('plain-https').locator('a').getAttribute('href')).toBe('https://cdn.acme.example/mpu.png');
    for (const [id, url] of [['legacy-js', 'javascript:alert(document.domain)'], ['legacy-data', 'data:text/html,<script>alert(1)</script>']]) {
      await card(id!).getByText(url!).waitFor();
      expect({ id, links: await card(id!).locator('a').count() }).toEqual({ id, links: 0 });
    }
    expect(await page.locator('a[href^="javascript:" i], a[href^="data:" i]').count()).toBe(0);
    expect({ foreign, pageErrors }).toEqual({ foreign: [], pageErrors: [] });
  });
});
