import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { graphql, startTestGateway } from '../support/gateway';
import { eventually } from '../support/infra';
import { accessibilityProblems, consoleDocuments, type ConsoleFixture, describeInBrowser, screenshotPath, signedInPage, startConsoleFixture, untypedUses, waitForExpression } from '../support/browser';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const SECRET = 'console-hmac-secret-5f1c2e7a9b3d4c6e8f0a1b2c3d4e5f6a';

describeInBrowser('the console in Chromium: a buyer acts on a buy, its creatives and its webhooks', () => {
  let gw: Gateway;
  let browser: Browser;
  let buyer: string;
  let seller: string;
  let webhookUrl: string;
  const foreign: string[] = [];
  const pageErrors: string[] = [];

  /** A guaranteed buy whose task's webhooks go to the buyer's own receiver here, approved by the seller. */
  const approvedBuy = async (): Promise<string> => {
    const res = await fetch(`${gw.url}/api/tasks/create_media_buy`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` },
      body: JSON.stringify({
        buyer_ref: `console-buyer-${randomBytes(3).toString('hex')}`,
        brand_manifest: { name: 'Acme', url: 'https://acme.example' },
        packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20000 }],
        start_time: { type: 'asap' },
        end_time: future(14),
        push_notification_config: { url: webhookUrl, operation_id: 'op-console', authentication: { schemes: ['HMAC-SHA256'], credentials: SECRET } },
      }),
    });
    const placed = (await res.json()) as { media_buy_id: string; task_id: string };
    expect((await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: placed.task_id }, seller)).body.data).toEqual({ approveTask: 'completed' });
    return placed.media_buy_id;
  };

  const checked = async (page: Page, name: string) => {
    await page.screenshot({ path: screenshotPath(`console-buyer-${name}`), fullPage: true });
    expect(await accessibilityProblems(page)).toEqual([]);
  };

  let fixture: ConsoleFixture;
  beforeAll(async () => {
    // The gateway's own receiver takes its webhooks on loopback (the test seam for private webhook URLs).
    fixture = await startConsoleFixture({ APPROVAL_POLICY: 'rules', ALLOW_PRIVATE_WEBHOOK_URLS: '1' });
    ({ gw, browser } = fixture);
    ({ buyer, seller } = fixture.keys);
    const endpoint = (await graphql(gw.url, `mutation { registerWebhookEndpoint(agentId: "adcp_gateway", senderDomain: "seller.example", mode: "hmac-sha256", secret: "${SECRET}") }`, undefined, buyer)).body.data!.registerWebhookEndpoint as { url_template: string };
    webhookUrl = endpoint.url_template.replace('{task_type}', 'create_media_buy');
  }, 60_000);
  afterAll(() => fixture?.stop());

  it('pauses and resumes a buy, changes its budget (a refused value at its field first), syncs and assigns a creative, sees its webhook activity, cancels it with a reason; the Webhooks page follows the receiver live', async () => {
    const mediaBuyId = await approvedBuy();
    const page = await signedInPage(browser, gw.url, buyer, { foreign, pageErrors });
    await page.goto(`${gw.url}/app/#/buys/${encodeURIComponent(mediaBuyId)}`);
    const status = (s: string) => page.locator(`#buy-title [data-status="${s}"]`);
    await status('active').waitFor();

    // Pause, then resume, from the keyboard: the status follows over the live subscription, focus stays on the button.
    await page.getByRole('button', { name: 'Pause', exact: true }).focus();
    await page.keyboard.press('Enter');
    await status('paused').waitFor();
    await waitForExpression(page, 'document.activeElement?.textContent === "Resume"', 5_000, 'focus on Resume');
    await page.keyboard.press('Enter');
    await status('active').waitFor();

    // A budget the gateway refuses, shown at its field; then one it takes.
    const budget = page.getByLabel('Budget of premium_ctv_guaranteed (USD)');
    await budget.fill('-5');
    await page.getByRole('button', { name: 'Change the budget' }).click();
    await page.locator('#budget-pkg-0-error').waitFor();
    expect(await budget.getAttribute('aria-invalid')).toBe('true');
    expect(await budget.getAttribute('aria-describedby')).toBe('budget-pkg-0-error');
    expect(await page.locator('#budget-pkg-0-error').textContent()).toMatch(/budget/i);
    await checked(page, 'budget-error');
    await budget.fill('25000');
    await page.getByRole('button', { name: 'Change the budget' }).click();
    await page.getByText('Budget now $25,000.00.').waitFor();
    expect(await budget.getAttribute('aria-invalid')).toBeNull();
    await page.getByText('premium_ctv_guaranteed: $25,000.00').waitFor();

    // A creative synced from a file, then assigned from the library to the buy's package.
    const sync = page.locator('form[aria-labelledby="sync-title"]');
    await sync.getByLabel('Creative name').fill('Spot 15 s');
    await sync.getByLabel('Format').selectOption({ value: 'https://creative.adcontextprotocol.org|video_16x9_30s' });
    await sync.getByLabel('Asset URL').fill('not a url');
    await sync.getByLabel('Duration (seconds)').fill('15');
    await sync.getByRole('button', { name: 'Sync the creative' }).click();
    await page.locator('#creative-url-error').waitFor();
    expect(await sync.getByLabel('Asset URL').getAttribute('aria-invalid')).toBe('true');
    await sync.getByLabel('Asset URL').fill('https://cdn.acme.example/spot.mp4');
    await sync.getByRole('button', { name: 'Sync the creative' }).click();
    await sync.getByText(/^Creative .+ created\.$/).waitFor();
    const assign = page.locator('form[aria-labelledby="assign-title"]');
    const option = assign.getByLabel('Creative').locator('option', { hasText: 'Spot 15 s' });
    await option.waitFor({ state: 'attached' });
    await assign.getByLabel('Creative').selectOption({ value: (await option.getAttribute('value'))! });
    await assign.getByLabel('premium_ctv_guaranteed').check();
    await assign.getByRole('button', { name: 'Assign' }).click();
    const card = page.locator('section[aria-labelledby="creatives-title"] li.card', { hasText: 'Spot 15 s' });
    await card.getByText('Assigned to premium_ctv_guaranteed').waitFor();
    const typed = (await graphql(gw.url, 'query($id: ID!) { mediaBuy(id: $id) { creatives { name assignments { packageId } } packages { id } } }', { id: mediaBuyId }, buyer)).body.data!.mediaBuy;
    expect(typed.creatives).toEqual([{ name: 'Spot 15 s', assignments: [{ packageId: typed.packages[0].id }] }]);

    // The task's webhooks, delivered to the buyer's own receiver.
    await page.locator('[data-webhook][data-state="delivered"]').first().waitFor({ timeout: 15_000 });
    expect(await page.locator('[data-webhook]').first().textContent()).toMatch(/Attempt 1: success \(HTTP 2\d\d\)/);
    await checked(page, 'buy-detail');

    // Cancel asks for a reason, refused when blank, at its field.
    await page.getByRole('button', { name: 'Cancel the buy…' }).click();
    await waitForExpression(page, 'document.activeElement?.id === "cancel-reason"', 5_000, 'focus on the reason');
    await page.getByLabel('Reason for canceling').fill('  ');
    await page.getByRole('button', { name: 'Cancel the buy', exact: true }).click();
    await page.locator('#cancel-reason-error').waitFor();
    expect(await page.getByLabel('Reason for canceling').getAttribute('aria-invalid')).toBe('true');
    await checked(page, 'cancel-confirmation');
    await page.getByLabel('Reason for canceling').fill('moved to Q1');
    await page.getByRole('button', { name: 'Cancel the buy', exact: true }).click();
    await status('canceled').waitFor();
    await page.getByText('(moved to Q1)').waitFor();

    // The Webhooks page: what the receiver accepted, and a new webhook arriving while it is open.
    await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
    const received = page.locator('[data-received]');
    await received.first().waitFor();
    const before = await received.count();
    await page.locator('section[aria-labelledby="library-title"] li.card', { hasText: 'Spot 15 s' }).waitFor();
    await approvedBuy();
    await eventually(async () => (await received.count()) > before, 15_000, 'a new received webhook on the page without a reload');
    await checked(page, 'webhooks');

    // The seller reads the buy with its creatives and webhooks, and gets none of the buyer's controls.
    const sellerPage = await signedInPage(browser, gw.url, seller, { foreign, pageErrors });
    await sellerPage.goto(`${gw.url}/app/#/buys/${encodeURIComponent(mediaBuyId)}`);
    await sellerPage.locator('section[aria-labelledby="creatives-title"] li.card', { hasText: 'Spot 15 s' }).waitFor();
    await sellerPage.locator('[data-webhook]').first().waitFor();
    expect(await sellerPage.locator('#actions-title, form[aria-labelledby="sync-title"], form[aria-labelledby="assign-title"]').count()).toBe(0);
    expect(await sellerPage.getByRole('alert').count()).toBe(0);

    // Readable at phone width: no horizontal scroll on either page.
    const phone = await signedInPage(browser, gw.url, buyer, { width: 390, foreign, pageErrors });
    await phone.goto(`${gw.url}/app/#/buys/${encodeURIComponent(mediaBuyId)}`);
    await phone.locator('[data-webhook]').first().waitFor();
    await phone.screenshot({ path: screenshotPath('console-buyer-phone-buy'), fullPage: true });
    expect(await phone.evaluate('document.documentElement.scrollWidth <= window.innerWidth + 1')).toBe(true);
    await phone.getByRole('link', { name: 'Webhooks', exact: true }).click();
    await phone.locator('[data-received]').first().waitFor();
    await phone.screenshot({ path: screenshotPath('console-buyer-phone-webhooks'), fullPage: true });
    expect(await phone.evaluate('document.documentElement.scrollWidth <= window.innerWidth + 1')).toBe(true);

    expect(pageErrors).toEqual([]);
    expect(foreign).toEqual([]);
  }, 120_000);

  it('every GraphQL document the console sent (POST and WebSocket) is valid and uses typed fields only: no JSONObject in or out', () => {
    expect(consoleDocuments.size).toBeGreaterThan(2);
    expect(untypedUses(consoleDocuments)).toEqual([]);
  });
});
