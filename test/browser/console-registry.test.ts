import type { Browser, Page } from 'playwright-core';
import { graphql, startTestGateway } from '../support/gateway';
import { startOrigins } from '../support/origins';
import { accessibilityProblems, consoleDocuments, type ConsoleFixture, describeInBrowser, screenshotPath, signedInPage, startConsoleFixture, untypedUses } from '../support/browser';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

const BRAND = '/.well-known/brand.json';
const ADAGENTS = '/.well-known/adagents.json';

describeInBrowser('the console’s registry in Chromium: brands, a publisher’s verdict, a storyboard, the live feed', () => {
  let gw: Gateway;
  let origins: Awaited<ReturnType<typeof startOrigins>>;
  let browser: Browser;
  let admin: string;
  let buyer: string;
  const foreign: string[] = [];
  const pageErrors: string[] = [];

  let fixture: ConsoleFixture;
  beforeAll(async () => {
    origins = await startOrigins({
      'acme.example': { [BRAND]: { body: { id: 'acme', names: [{ en: 'Acme' }], colors: { primary: '#ff0000' }, logos: [{ url: 'https://cdn.acme.example/a-very-long-path/to/the/logo/of/the/brand/logo.svg' }] } } },
      'house.example': { [BRAND]: { body: { house: { domain: 'house.example', name: 'House Inc' }, brands: [{ id: 'house_master', names: [{ en: 'House' }], keller_type: 'master' }, { id: 'tide', names: [{ en: 'Tide' }], keller_type: 'sub_brand', properties: [{ type: 'website', identifier: 'tide.example' }] }] } } },
      'tide.example': { [BRAND]: { body: { house: 'house.example' } } },
      // Valid but for one agent's http URL (an error), and no $schema (a warning).
      'webpub.example': { [ADAGENTS]: { body: { last_updated: '2026-11-23T10:00:00Z', authorized_agents: [{ url: 'https://sales.example/mcp', authorized_for: 'Display', authorization_type: 'property_tags', property_tags: ['all'] }, { url: 'http://insecure.example/mcp', authorized_for: 'Video', authorization_type: 'property_tags', property_tags: ['all'] }] } } },
    });
    fixture = await startConsoleFixture({ REGISTRY_ORIGIN_OVERRIDES: origins.overrides });
    ({ gw, browser } = fixture);
    ({ admin, buyer } = fixture.keys);
    for (const domain of ['acme.example', 'tide.example']) {
      const crawled = await graphql(gw.url, 'mutation($d: String!) { crawlBrand(domain: $d) { found } }', { d: domain }, admin);
      expect(crawled.body.data!.crawlBrand).toEqual({ found: true });
    }
  }, 60_000);
  afterAll(async () => {
    await fixture?.stop();
    await origins?.close();
  });

  const signedIn = (key: string, width = 1200) => signedInPage(browser, gw.url, key, { width, foreign, pageErrors });
  const fitsWidth = (page: Page) => page.evaluate('document.documentElement.scrollWidth <= window.innerWidth + 1');

  it('an admin looks up brands, revalidates a publisher and reads its findings, opens a storyboard, and watches a registration arrive in the feed', async () => {
    const page = await signedIn(admin);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Registry' }).click();

    // Brands: found ones with their place in the house, and a clear "not found".
    await page.getByLabel('Domains').fill('acme.example, tide.example nowhere.example');
    await page.getByRole('button', { name: 'Look up' }).click();
    await page.locator('[data-brand="nowhere.example"]').waitFor();
    expect(await page.locator('[data-brand="acme.example"] h3').textContent()).toBe('Acme');
    expect(await page.locator('[data-brand="acme.example"]').textContent()).toContain('primary #ff0000');
    expect(await page.locator('[data-brand="tide.example"] [data-hierarchy]').textContent()).toMatch(/sub_brand of House Inc \(house\.example\) — confirmed by the house/);
    expect(await page.locator('[data-brand="nowhere.example"]').getAttribute('data-found')).toBe('false');
    expect(await page.locator('[data-brand="nowhere.example"]').textContent()).toContain('Not found');
    await page.screenshot({ path: screenshotPath('console-registry-brands'), fullPage: true });
    expect(await accessibilityProblems(page)).toEqual([]);

    // A domain the API refuses is shown at its field.
    await page.getByLabel('Domains').fill('not_a_domain');
    await page.getByRole('button', { name: 'Look up' }).click();
    await page.locator('#brand-domains-error').waitFor();
    expect(await page.getByLabel('Domains').getAttribute('aria-invalid')).toBe('true');

    // Publishers: never revalidated, then revalidated here (admin), its findings listed by severity in words.
    await page.getByRole('navigation', { name: 'Registry' }).getByRole('link', { name: 'Publishers' }).click();
    await page.getByLabel('Publisher domain').fill('webpub.example');
    await page.getByRole('button', { name: 'Show verdict' }).click();
    await page.getByText('has never been revalidated').waitFor();
    await page.getByRole('button', { name: 'Revalidate now' }).click();
    const verdict = page.locator('[data-publisher="webpub.example"]');
    await verdict.waitFor();
    expect(await verdict.locator('[data-verdict]').textContent()).toMatch(/adagents\.json invalid/);
    const error = verdict.locator('li[data-severity="error"]');
    expect(await error.textContent()).toMatch(/^\s*Error\s+at authorized_agents\[1\]\.url: Agent URL must use HTTPS/);
    expect(await verdict.locator('li[data-severity="warning"]').first().textContent()).toMatch(/^\s*Warning\s+at \$schema/);
    await page.screenshot({ path: screenshotPath('console-registry-publisher'), fullPage: true });
    expect(await accessibilityProblems(page)).toEqual([]);

    // Storyboards: picked by id, its phases and steps.
    await page.getByRole('navigation', { name: 'Registry' }).getByRole('link', { name: 'Storyboards' }).click();
    await page.getByText(/^Type to pick one of \d+\.$/).waitFor();
    await page.getByLabel('Storyboard id').fill('idempotency');
    await page.getByRole('button', { name: 'Open' }).click();
    const step = page.locator('[data-storyboard="idempotency"] [data-step="get_capabilities"]');
    await step.waitFor();
    expect(await page.locator('#storyboard-view-title').textContent()).toBe('Idempotency enforcement');
    expect(await step.textContent()).toContain('get_adcp_capabilities');
    await step.getByText(/^Expected answer/).click();
    await step.getByText(/replay_ttl_seconds/).first().waitFor();
    await page.screenshot({ path: screenshotPath('console-registry-storyboard') });
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.getByLabel('Storyboard id').fill('no_such_storyboard');
    await page.getByRole('button', { name: 'Open' }).click();
    await page.locator('#storyboard-id-error').waitFor();
    expect(await page.locator('#storyboard-id-error').textContent()).toBe('Storyboard not found');

    // The change feed: what is there, then a registration made now arrives without a reload.
    await page.getByRole('navigation', { name: 'Registry' }).getByRole('link', { name: 'Change feed' }).click();
    await page.locator('[data-entity="acme.example"]').waitFor();
    await page.getByText(/^Live:/).waitFor();
    const registered = await graphql(gw.url, 'mutation($i: BrandIdentityInput!) { registerBrand(domain: "live.example", identity: $i) { found } }', { i: { brandName: 'Live Brand', houseDomain: 'house.example' } }, admin);
    expect(registered.body.errors).toBeUndefined();
    const arrived = page.locator('.feed li').first();
    await page.locator('.feed li:first-child[data-entity="live.example"]').waitFor({ timeout: 10_000 });
    expect(await arrived.textContent()).toContain('brand.updated');
    await page.screenshot({ path: screenshotPath('console-registry-feed'), fullPage: true });
    expect(await accessibilityProblems(page)).toEqual([]);

    expect(pageErrors).toEqual([]);
    expect(foreign).toEqual([]);
  }, 90_000);

  it('a buyer sees the registry without the admin’s revalidation, readable at 390 px with no horizontal scroll', async () => {
    const phone = await signedIn(buyer, 390);
    await phone.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Registry' }).click();
    await phone.getByLabel('Domains').fill('acme.example tide.example');
    await phone.getByRole('button', { name: 'Look up' }).click();
    await phone.locator('[data-brand="tide.example"]').waitFor();
    await phone.screenshot({ path: screenshotPath('console-registry-phone-brands'), fullPage: true });
    expect(await fitsWidth(phone)).toBe(true);

    await phone.getByRole('link', { name: 'Publishers' }).click();
    await phone.getByLabel('Publisher domain').fill('webpub.example');
    await phone.getByRole('button', { name: 'Show verdict' }).click();
    await phone.locator('[data-publisher="webpub.example"] li[data-severity="error"]').waitFor();
    expect(await phone.getByRole('button', { name: 'Revalidate now' }).count()).toBe(0);
    await phone.screenshot({ path: screenshotPath('console-registry-phone-publisher'), fullPage: true });
    expect(await fitsWidth(phone)).toBe(true);

    await phone.getByRole('link', { name: 'Storyboards' }).click();
    await phone.getByLabel('Storyboard id').fill('idempotency');
    await phone.getByLabel('Storyboard id').press('Enter'); // the keyboard alone opens it
    await phone.locator('[data-step="get_capabilities"]').waitFor();
    expect(await fitsWidth(phone)).toBe(true);

    await phone.getByRole('link', { name: 'Change feed' }).click();
    await phone.locator('.feed li').first().waitFor();
    await phone.screenshot({ path: screenshotPath('console-registry-phone-feed'), fullPage: true });
    expect(await fitsWidth(phone)).toBe(true);
    expect(await accessibilityProblems(phone)).toEqual([]);

    expect(pageErrors).toEqual([]);
    expect(foreign).toEqual([]);
  }, 60_000);

  it('every GraphQL document the console sent (POST and WebSocket) is valid and uses typed fields only: no JSONObject in or out', () => {
    expect(consoleDocuments.size).toBeGreaterThan(2);
    expect(untypedUses(consoleDocuments)).toEqual([]);
  });
});
