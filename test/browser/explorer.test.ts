import type { Browser, Page } from 'playwright-core';
import { issueApiKey } from '../../src/application/api-keys';
import { startTestGateway } from '../support/gateway';
import { describeInBrowser, launchBrowser, screenshotPath, waitForExpression } from '../support/browser';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

describeInBrowser('the GraphQL explorer at /graphql, in Chromium, offline', () => {
  let gw: Gateway;
  let browser: Browser;
  let key: string;
  const foreign: string[] = [];

  beforeAll(async () => {
    gw = await startTestGateway();
    key = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await gw?.stop();
  });

  /** A page that records every request leaving this gateway's origin (there must be none) and fails on a script error. */
  async function openPage(): Promise<{ page: Page; errors: string[] }> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(String(err)));
    page.on('request', (req) => {
      if (!req.url().startsWith(gw.url) && !req.url().startsWith(gw.url.replace(/^http/, 'ws'))) foreign.push(req.url());
    });
    return { page, errors };
  }

  it('loads GraphiQL from the gateway alone and runs a query with the key from its Headers tab', async () => {
    const { page, errors } = await openPage();
    // The key as a person would type it in the Headers tab (GraphiQL keeps the tab in localStorage).
    // (Scripts for the page are strings: this file is compiled without the DOM's types.)
    await page.addInitScript({ content: `localStorage.setItem('graphiql:headers', ${JSON.stringify(JSON.stringify({ Authorization: `Bearer ${key}` }))})` });
    await page.goto(`${gw.url}/graphql`);
    await page.waitForSelector('.graphiql-container', { timeout: 20_000 });
    await page.click('.graphiql-execute-button');
    await waitForExpression(page, `document.querySelector('.result-window')?.textContent?.includes('"role": "buyer"')`, 20_000, 'the query result');
    const result = await page.textContent('.result-window');
    expect(result).toContain('"org": "acme"');
    await page.screenshot({ path: screenshotPath('graphql-explorer'), fullPage: true });
    expect(errors).toEqual([]);
    expect(foreign).toEqual([]);
  }, 60_000);
});
