import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { DEMO_CATALOG } from '../../src/application/catalog';
import { graphql, startTestGateway } from '../support/gateway';
import { eventually } from '../support/infra';
import { accessibilityProblems, consoleDocuments, type ConsoleFixture, describeInBrowser, screenshotPath, signedInPage, startConsoleFixture, untypedUses } from '../support/browser';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

describeInBrowser('the console in Chromium: discovery, several packages, the seller’s catalog and restated delivery', () => {
  let gw: Gateway;
  let browser: Browser;
  let buyer: string;
  let seller: string;
  const foreign: string[] = [];
  const pageErrors: string[] = [];
  const signedIn = (key: string, width = 1200) => signedInPage(browser, gw.url, key, { width, foreign, pageErrors });
  const delivery = async (mediaBuyId: string) =>
    (await (await fetch(`${gw.url}/api/tasks/get_media_buy_delivery`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` }, body: JSON.stringify({ media_buy_id: mediaBuyId, granularity: 'hourly' }) })).json()) as {
      delivery: { impressions: number; spend: number };
      timeseries: { start: string; impressions: number; spend: number }[];
    };

  let fixture: ConsoleFixture;
  beforeAll(async () => {
    fixture = await startConsoleFixture({ APPROVAL_POLICY: 'rules' });
    ({ gw, browser } = fixture);
    ({ buyer, seller } = fixture.keys);
  }, 60_000);
  afterAll(() => fixture?.stop());

  it('the buyer finds products by brief and filters and plans a buy of two; the seller sees the catalog’s capacity, asks for input, approves, moves the clock and restates an hour; the buyer’s charts follow, hourly and daily', async () => {
    const page = await signedIn(buyer);
    await page.getByRole('link', { name: 'Products', exact: true }).click();
    const cards = page.locator('[data-product]');
    await cards.first().waitFor();
    const all = await cards.count();

    // A brief ranks the catalog as get_products does, each product saying why.
    const shown = () => cards.evaluateAll((els) => els.map((e) => e.getAttribute('data-product')));
    const ranked = (await graphql(gw.url, '{ products(brief: "live sports fans") { productId } }', undefined, buyer)).body.data!.products.map((p: { productId: string }) => p.productId);
    expect(ranked.slice(0, 2).sort()).toEqual(['premium_ctv_guaranteed', 'sports_video_auction']);
    await page.getByLabel('Your brief').fill('live sports fans');
    await page.getByRole('button', { name: 'Find products' }).click();
    await eventually(async () => JSON.stringify(await shown()) === JSON.stringify(ranked), 10_000, 'the ranked products');
    expect(await cards.first().textContent()).toMatch(/Relevance: matches live, sports, fans/);
    // A filter narrows it: guaranteed products only, as get_products answers the same filter.
    await page.getByLabel('Delivery').selectOption('guaranteed');
    await page.getByRole('button', { name: 'Find products' }).click();
    const guaranteed = (await graphql(gw.url, '{ products(brief: "live sports fans", filters: { deliveryType: "guaranteed" }) { productId } }', undefined, buyer)).body.data!.products.map((p: { productId: string }) => p.productId);
    expect(guaranteed.length).toBeLessThan(all);
    await eventually(async () => JSON.stringify(await shown()) === JSON.stringify(guaranteed), 10_000, 'the guaranteed products');
    await page.screenshot({ path: screenshotPath('console-products'), fullPage: true });
    expect(await accessibilityProblems(page)).toEqual([]);

    // Two products chosen (one guaranteed, one not) become the two packages of a new buy.
    await page.getByLabel('Delivery').selectOption('');
    await page.getByRole('button', { name: 'Find products' }).click();
    await page.locator('[data-product="premium_ctv_guaranteed"]').waitFor();
    await page.locator('[data-product="premium_ctv_guaranteed"]').getByRole('checkbox').check();
    await page.locator('[data-product="news_display_run_of_site"]').getByRole('checkbox').check();
    await page.getByRole('link', { name: 'Plan a buy with 2 products' }).click();
    const packages = page.locator('fieldset.package');
    await packages.nth(1).waitFor();
    expect(await packages.count()).toBe(2);
    expect(await packages.nth(0).getByLabel('Product and price').inputValue()).toBe('premium_ctv_guaranteed|cpm_usd_guaranteed');
    expect(await packages.nth(1).getByLabel('Product and price').inputValue()).toMatch(/^news_display_run_of_site\|/);
    await page.getByLabel('Your reference').fill(`discovery-${randomBytes(3).toString('hex')}`);
    await page.getByLabel('Brand website').fill('https://acme.example');
    await packages.nth(0).getByLabel('Budget').fill('20000');
    await packages.nth(1).getByLabel('Budget').fill('-1');
    await page.getByLabel('Flight ends').fill(new Date(Date.now() + 10 * 86_400_000).toISOString().slice(0, 10));
    await page.getByRole('button', { name: 'Place the buy' }).click();
    // The second package's refused budget shows at that package's field, not the first's.
    await page.locator('#buy-pkg-1-budget-error').waitFor();
    expect(await packages.nth(1).getByLabel('Budget').getAttribute('aria-invalid')).toBe('true');
    expect(await packages.nth(0).getByLabel('Budget').getAttribute('aria-invalid')).toBeNull();
    await page.screenshot({ path: screenshotPath('console-new-buy-two-packages'), fullPage: true });
    expect(await accessibilityProblems(page)).toEqual([]);
    await packages.nth(1).getByLabel('Budget').fill('5000');
    await page.getByRole('button', { name: 'Place the buy' }).click();
    await page.waitForURL((u) => /^#\/buys\/mb_/.test(u.hash));
    const mediaBuyId = decodeURIComponent(new URL(page.url()).hash.slice('#/buys/'.length));
    await page.locator('#buy-title [data-status="pending"]').waitFor();

    // The seller: the catalog with each product's capacity, as the catalog file says.
    const sellerPage = await signedIn(seller);
    await sellerPage.getByRole('link', { name: 'Catalog', exact: true }).click();
    const demo = JSON.parse(fs.readFileSync(DEMO_CATALOG, 'utf8')) as { products: { product_id: string; delivery: { daily_impression_capacity: number } }[] };
    for (const p of demo.products) {
      expect(await sellerPage.locator(`[data-product="${p.product_id}"] [data-capacity]`).getAttribute('data-capacity')).toBe(String(p.delivery.daily_impression_capacity));
    }
    await sellerPage.screenshot({ path: screenshotPath('console-seller-catalog'), fullPage: true });
    expect(await accessibilityProblems(sellerPage)).toEqual([]);

    // The seller opens the buy from the approvals inbox, approves it, and moves the clock on.
    await sellerPage.getByRole('link', { name: 'Approvals', exact: true }).click();
    const card = sellerPage.locator('[data-task]', { has: sellerPage.locator(`a[href="#/buys/${encodeURIComponent(mediaBuyId)}"]`) });
    // A rejection needs a reason, asked for at its field; asking for input keeps the task in the inbox, its history growing.
    await card.getByRole('button', { name: 'Reject' }).click();
    await card.getByRole('alert').waitFor();
    expect(await card.getByLabel('Note or reason').getAttribute('aria-invalid')).toBe('true');
    await card.getByLabel('Note or reason').fill('Send the signed IO first');
    await card.getByRole('button', { name: 'Ask for input' }).click();
    await card.locator('[data-status="input-required"]').waitFor();
    await card.getByText('History').click();
    await card.locator('.timeline li', { hasText: 'input-required: Send the signed IO first' }).waitFor();
    await sellerPage.screenshot({ path: screenshotPath('console-seller-input-required'), fullPage: true });
    expect(await accessibilityProblems(sellerPage)).toEqual([]);
    await card.getByRole('button', { name: 'Approve' }).click();
    await card.waitFor({ state: 'detached' });
    await sellerPage.getByLabel('Hours').fill('3');
    await sellerPage.getByRole('button', { name: 'Advance the clock' }).click();
    await sellerPage.getByText(/^Clock at /).waitFor();
    const before = (await eventually(async () => {
      const d = await delivery(mediaBuyId);
      return d.timeseries.filter((h) => h.impressions > 100).length >= 3 ? d : undefined;
    }, 15_000, 'three hours of delivery'))!;

    // The buyer's page (no reload): hourly bars add up to the report; spend against an even pace.
    await page.locator('#buy-title [data-status="active"]').waitFor({ timeout: 10_000 });
    const bars = page.locator('figure.bars');
    await eventually(async () => Number(await bars.getAttribute('data-total-impressions')) === before.delivery.impressions, 15_000, 'the hourly chart');
    expect(Number(await page.locator('figure.pacing').getAttribute('data-spent'))).toBeCloseTo(before.delivery.spend, 2);

    // The seller restates the first recorded hour of the first package from the buy's page: a bad figure first, shown at its field.
    await sellerPage.getByRole('link', { name: 'Media buys', exact: true }).click();
    await sellerPage.locator(`[data-buy="${mediaBuyId}"] a`).click();
    const form = sellerPage.locator('form.adjust');
    await form.waitFor();
    const hour = (await form.getByLabel('Hour (UTC)').locator('option').nth(1).getAttribute('value'))!;
    await form.getByLabel('Hour (UTC)').selectOption(hour);
    await form.getByLabel('Impressions').fill('-5');
    await form.getByLabel(/^Spend/).fill('0.10');
    await form.getByLabel('Reason').fill('invalid traffic filtered');
    await form.getByRole('button', { name: 'Restate the hour' }).click();
    await sellerPage.locator('#adjust-impressions-error').waitFor();
    expect(await form.getByLabel('Impressions').getAttribute('aria-invalid')).toBe('true');
    await sellerPage.screenshot({ path: screenshotPath('console-seller-restate-error'), fullPage: true });
    expect(await accessibilityProblems(sellerPage)).toEqual([]);
    await form.getByLabel('Impressions').fill('10');
    await form.getByRole('button', { name: 'Restate the hour' }).click();
    await form.getByText(/^Restated: /).waitFor();

    // The buyer's charts follow the restatement live; the daily view adds up to the same report.
    const after = (await eventually(async () => {
      const d = await delivery(mediaBuyId);
      return d.delivery.impressions !== before.delivery.impressions ? d : undefined;
    }, 15_000, 'the restated delivery'))!;
    await eventually(async () => Number(await bars.getAttribute('data-total-impressions')) === after.delivery.impressions, 15_000, 'the chart to show the restatement');
    await page.getByLabel('Daily', { exact: true }).check();
    await page.getByLabel('Spend', { exact: true }).check();
    await eventually(async () => (await page.locator('#chart-title').textContent())?.startsWith('Spend per day'), 10_000, 'the daily spend chart');
    const days = await page.locator('figure.bars rect.bar').evaluateAll((rects) => rects.map((r) => ({ impressions: Number(r.getAttribute('data-impressions')), spend: Number(r.getAttribute('data-spend')) })));
    expect(days.length).toBeLessThanOrEqual(2); // three hours fall on one or two UTC days
    expect(days.reduce((t, d) => t + d.impressions, 0)).toBe(after.delivery.impressions);
    expect(days.reduce((t, d) => t + d.spend, 0)).toBeCloseTo(after.delivery.spend, 2);
    await page.screenshot({ path: screenshotPath('console-buy-daily-spend'), fullPage: true });
    expect(await accessibilityProblems(page)).toEqual([]);

    // Discovery is readable at phone width.
    const phone = await signedIn(buyer, 390);
    await phone.getByRole('link', { name: 'Products', exact: true }).click();
    await phone.locator('[data-product]').first().waitFor();
    await phone.screenshot({ path: screenshotPath('console-phone-products'), fullPage: true });
    expect(await phone.evaluate('document.documentElement.scrollWidth <= window.innerWidth + 1')).toBe(true);

    expect(pageErrors).toEqual([]);
    expect(foreign).toEqual([]);
  }, 120_000);

  it('every GraphQL document the console sent (POST and WebSocket) is valid and uses typed fields only: no JSONObject in or out', () => {
    expect(consoleDocuments.size).toBeGreaterThan(2);
    expect(untypedUses(consoleDocuments)).toEqual([]);
  });
});
