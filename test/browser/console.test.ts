import { randomBytes } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { graphql, startTestGateway } from '../support/gateway';
import { eventually } from '../support/infra';
import { accessibilityProblems, consoleDocuments, type ConsoleFixture, describeInBrowser, screenshotPath, signedInPage, startConsoleFixture, untypedUses } from '../support/browser';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

describeInBrowser('the console in Chromium: a buyer and a seller, live', () => {
  let gw: Gateway;
  let browser: Browser;
  let buyer: string;
  let seller: string;
  const foreign: string[] = [];
  const pageErrors: string[] = [];

  let fixture: ConsoleFixture;
  beforeAll(async () => {
    fixture = await startConsoleFixture({ APPROVAL_POLICY: 'rules' });
    ({ gw, browser } = fixture);
    ({ buyer, seller } = fixture.keys);
  }, 60_000);
  afterAll(() => fixture?.stop());

  const signedIn = (key: string, width = 1200, how: 'key' | 'oauth' = 'key') => signedInPage(browser, gw.url, key, { width, how, foreign, pageErrors });

  it('a bad key is refused at its field; the page has no serious accessibility problem', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${gw.url}/app/`);
    await page.getByLabel('API key').fill('sk_not-a-key');
    await page.getByRole('button', { name: 'Sign in with the key' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByLabel('API key').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByRole('alert').textContent()).toMatch(/key/i);
    await page.screenshot({ path: screenshotPath('console-sign-in-error') });
    expect(await accessibilityProblems(page)).toEqual([]);
    await context.close();
  }, 60_000);

  it('signed in through OAuth, the buyer places a guaranteed buy (a refused budget shown at its field) and watches the seller approve it in another browser: active without a reload; the delivery chart draws get_media_buy_delivery', async () => {
    // The buyer signs in through the gateway's sign-in page; the console never sees the key.
    const buyerPage = await signedIn(buyer, 1200, 'oauth');
    expect(await buyerPage.evaluate('sessionStorage.getItem("adcp-console-session")')).not.toContain(buyer);
    expect(new URL(buyerPage.url()).search).toBe(''); // the single-use code is off the address bar

    // A guaranteed buy, placed in the console's form: first with a budget the API refuses, shown at its field.
    await buyerPage.getByRole('link', { name: 'New media buy' }).click();
    await buyerPage.getByLabel('Your reference').fill(`console-${randomBytes(3).toString('hex')}`);
    await buyerPage.getByLabel('Brand website').fill('https://acme.example');
    await buyerPage.getByLabel('Product and price').selectOption({ value: 'premium_ctv_guaranteed|cpm_usd_guaranteed' });
    await buyerPage.getByLabel('Budget').fill('-5');
    await buyerPage.getByLabel('Flight ends').fill(new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10));
    await buyerPage.getByRole('button', { name: 'Place the buy' }).click();
    await buyerPage.locator('#buy-pkg-0-budget-error').waitFor();
    expect(await buyerPage.getByLabel('Budget').getAttribute('aria-invalid')).toBe('true');
    expect(await buyerPage.locator('#buy-pkg-0-budget-error').textContent()).toContain('budget');
    await buyerPage.screenshot({ path: screenshotPath('console-new-buy-field-error'), fullPage: true });
    expect(await accessibilityProblems(buyerPage)).toEqual([]);
    await buyerPage.getByLabel('Budget').fill('20000');
    await buyerPage.getByRole('button', { name: 'Place the buy' }).click();
    await buyerPage.waitForURL((u) => /^#\/buys\/mb_/.test(u.hash));
    const mediaBuyId = decodeURIComponent(new URL(buyerPage.url()).hash.slice('#/buys/'.length));
    const status = buyerPage.locator('#buy-title [data-status]');
    await buyerPage.locator('#buy-title [data-status="pending"]').waitFor();
    const taskId = ((await graphql(gw.url, 'query($id: ID!) { mediaBuy(id: $id) { task { id } } }', { id: mediaBuyId }, buyer)).body.data!.mediaBuy.task.id) as string;
    await buyerPage.getByRole('link', { name: '← Media buys' }).click();
    const row = buyerPage.locator(`[data-buy="${mediaBuyId}"]`);
    await row.locator('[data-status="pending"]').waitFor();
    await buyerPage.screenshot({ path: screenshotPath('console-buyer-buys') });
    expect(await accessibilityProblems(buyerPage)).toEqual([]);
    await row.getByRole('link').click();
    await status.waitFor();

    const sellerPage = await signedIn(seller);
    const card = sellerPage.locator(`[data-task="${taskId}"]`);
    await card.waitFor();
    await sellerPage.screenshot({ path: screenshotPath('console-seller-approvals') });
    expect(await accessibilityProblems(sellerPage)).toEqual([]);
    await card.getByRole('button', { name: 'Approve' }).click();
    await card.waitFor({ state: 'detached' });

    // The buyer's page, untouched since it loaded, follows the approval over the WebSocket.
    await buyerPage.locator('#buy-title [data-status="active"]').waitFor({ timeout: 10_000 });

    // The seller moves the demo clock three hours on; the buy delivers.
    await sellerPage.getByLabel('Hours').fill('3');
    await sellerPage.getByRole('button', { name: 'Advance the clock' }).click();
    await sellerPage.getByText(/^Clock at /).waitFor();
    const report = await eventually(async () => {
      const r = (await (await fetch(`${gw.url}/api/tasks/get_media_buy_delivery`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` }, body: JSON.stringify({ media_buy_id: mediaBuyId }) })).json()) as { delivery?: { impressions: number } };
      return (r.delivery?.impressions ?? 0) > 0 ? r : undefined;
    }, 15_000, 'delivery');
    // Still no reload: the page follows the buy's delivery too.
    const chart = buyerPage.locator('figure.bars');
    await eventually(async () => Number(await chart.getAttribute('data-total-impressions', { timeout: 10_000 })) === report!.delivery!.impressions, 15_000, 'the chart to show the delivery');
    const bars = await buyerPage.locator('figure.bars rect.bar').evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('data-impressions'))));
    expect(bars.reduce((t, n) => t + n, 0)).toBe(report!.delivery!.impressions);
    await buyerPage.screenshot({ path: screenshotPath('console-buy-detail'), fullPage: true });
    expect(await accessibilityProblems(buyerPage)).toEqual([]);

    // Readable at phone width.
    const phone = await signedIn(buyer, 390);
    await phone.locator(`[data-buy="${mediaBuyId}"]`).waitFor();
    await phone.screenshot({ path: screenshotPath('console-phone-buys'), fullPage: true });
    expect(await phone.evaluate('document.documentElement.scrollWidth <= window.innerWidth + 1')).toBe(true);

    expect(pageErrors).toEqual([]);
    expect(foreign).toEqual([]);
  }, 90_000);

  it('every GraphQL document the console sent (POST and WebSocket) is valid and uses typed fields only: no JSONObject in or out', () => {
    expect(consoleDocuments.size).toBeGreaterThan(2);
    expect(untypedUses(consoleDocuments)).toEqual([]);
  });
});
