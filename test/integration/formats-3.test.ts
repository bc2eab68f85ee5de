import { randomUUID } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import { startTestGateway } from '../support/gateway';
import { mcpCall } from '../support/mcp-call';

type Json = Record<string, any>;
const STANDARD = 'https://creative.adcontextprotocol.org';
const SANDBOX = { brand: { domain: 'formats.example' }, operator: 'agency.example' };
const MPU = { agent_url: STANDARD, id: 'display_300x250' };
const VIDEO = { agent_url: STANDARD, id: 'video_16x9_30s' };
const image = (width: number, height: number) => ({ asset_type: 'image', url: 'https://cdn.acme.example/a.png', width, height });
const video = (width: number, height: number, duration_ms: number) => ({ asset_type: 'video', url: 'https://cdn.acme.example/a.mp4', width, height, duration_ms });

/**
 * Issue 35, item 5 (creative part): formats say what sync_creatives checks of their assets (3.0
 * per-asset requirements, exactly those), and a format reference is taken or refused by one rule
 * in sync_creatives, build_creative and preview_creative, the refusal listing each accepted format
 * once as a full format_id. Every success is checked against its 3.0 response schema (mcpCall).
 */
describe('creative formats over AdCP 3.0: requirements and one rule for foreign formats', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let key: string;
  const call = (name: string, args: Json) => mcpCall(gw.url, key, name, args);
  const sync = (creatives: Json[], account?: Json) => call('sync_creatives', { creatives, idempotency_key: randomUUID(), ...(account ? { account } : {}) });
  const build = (format: Json, account?: Json) => call('build_creative', { message: 'Summer sale.', target_format_id: format, idempotency_key: randomUUID(), ...(account ? { account } : {}) });
  const preview = (format: Json, account?: Json) =>
    call('preview_creative', { request_type: 'single', creative_manifest: { name: 'MPU', format_id: format, assets: { image: image(300, 250) } }, ...(account ? { account } : {}) });

  beforeAll(async () => {
    gw = await startTestGateway();
    key = (await issueApiKey(gw.app.store, { org: 'formats-3', role: 'buyer' }, { now: new Date().toISOString() })).key;
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it('list_creative_formats states per asset what sync_creatives checks: video size and duration, image size, and no file types or sizes', async () => {
    const { body } = await call('list_creative_formats', {});
    const format = (id: string) => body.formats.find((f: Json) => f.format_id.id === id);
    const asset = (id: string, assetId: string) => format(id).assets.find((a: Json) => a.asset_id === assetId);
    expect(asset('video_16x9_30s', 'video').requirements).toEqual({ min_width: 1920, max_width: 1920, min_height: 1080, max_height: 1080, min_duration_ms: 6000, max_duration_ms: 30000 });
    expect(asset('display_728x90', 'image').requirements).toEqual({ min_width: 728, max_width: 728, min_height: 90, max_height: 90 });
    expect(asset('display_300x250', 'image').requirements).toEqual({ min_width: 300, max_width: 300, min_height: 250, max_height: 250 });
    expect(asset('display_300x250_catalog', 'catalog').requirements).toEqual({ catalog_type: 'product' });
    expect(asset('display_300x250_catalog', 'impression_tracker').requirements).toEqual({ protocols: ['https', 'http'] });
    // What the seller never checks (it fetches no file) is not stated.
    const stated = new Set(body.formats.flatMap((f: Json) => f.assets.flatMap((a: Json) => Object.keys(a.requirements ?? {}))));
    expect([...stated].sort()).toEqual(['catalog_type', 'max_duration_ms', 'max_height', 'max_width', 'min_duration_ms', 'min_height', 'min_width', 'protocols']);
  });

  it('sync_creatives refuses a creative that breaks a stated requirement, naming the field', async () => {
    const { body } = await sync([
      { creative_id: 'ok-mpu', name: 'MPU', format_id: MPU, assets: { image: image(300, 250) } },
      { creative_id: 'small-mpu', name: 'Banner in an MPU', format_id: MPU, assets: { image: image(320, 50) } },
      { creative_id: 'sd-video', name: 'SD spot', format_id: VIDEO, assets: { video: video(1280, 720, 15000) } },
      { creative_id: 'short-video', name: 'Bumper', format_id: VIDEO, assets: { video: video(1920, 1080, 5000) } },
      { creative_id: 'hotel-feed', name: 'Hotels', format_id: { agent_url: `${gw.url}/mcp`, id: 'display_300x250_catalog' }, assets: { catalog: { asset_type: 'catalog', catalog_id: 'h', type: 'hotel' } } },
    ]);
    const by = Object.fromEntries(body.creatives.map((c: Json) => [c.creative_id, c]));
    expect(by['ok-mpu'].action).toBe('created');
    expect(by['small-mpu'].action).toBe('failed');
    expect(by['small-mpu'].errors.map((e: Json) => e.field)).toEqual(['creatives[1].assets.image.width', 'creatives[1].assets.image.height']);
    expect(by['small-mpu'].errors[0].message).toBe("width 320 px is not the format's 300 px");
    expect(by['sd-video'].errors.map((e: Json) => e.field)).toEqual(['creatives[2].assets.video.width', 'creatives[2].assets.video.height']);
    expect(by['short-video'].errors).toEqual([expect.objectContaining({ code: 'VALIDATION_ERROR', field: 'creatives[3].assets.video.duration_ms' })]);
    expect(by['hotel-feed'].errors).toEqual([expect.objectContaining({ field: 'creatives[4].assets.catalog.type' })]);
  });

  it('a foreign format is refused alike by sync_creatives, build_creative and preview_creative; a standard one is taken by all three', async () => {
    for (const [foreign, account] of [
      [{ agent_url: 'https://creative.other-vendor.com', id: 'display_300x250' }, SANDBOX],
      [{ agent_url: STANDARD, id: 'vast_30s' }, SANDBOX],
      // A placeholder agent stands for this seller under a sandbox account only, in all three.
      [{ agent_url: 'https://your-platform.example.com', id: 'display_300x250' }, undefined],
    ] as const) {
      const synced = (await sync([{ creative_id: `c-${foreign.id}`, name: 'x', format_id: foreign, assets: { image: image(300, 250) } }], account)).body.creatives[0];
      const built = await build(foreign, account);
      const previewed = await preview(foreign, account);
      expect(synced.action).toBe('failed');
      expect(built.isError && previewed.isError).toBe(true);
      const [s, b, p] = [synced.errors[0], built.body.adcp_error, previewed.body.adcp_error];
      expect(s).toMatchObject({ code: 'VALIDATION_ERROR', field: 'creatives[0].format_id' });
      expect(b).toMatchObject({ code: 'VALIDATION_ERROR', field: 'target_format_id', message: s.message, details: s.details });
      expect(p).toMatchObject({ code: 'VALIDATION_ERROR', field: 'creative_manifest.format_id', message: s.message, details: s.details });
      expect(s.message).toContain(`format ${foreign.id} of ${foreign.agent_url} is not one this seller accepts`);
    }
    for (const [taken, account] of [
      [MPU, undefined],
      [MPU, SANDBOX],
      [{ agent_url: 'https://your-platform.example.com', id: 'display_300x250' }, SANDBOX],
    ] as const) {
      expect((await sync([{ creative_id: `ok-${randomUUID()}`, name: 'x', format_id: taken, assets: { image: image(300, 250) } }], account)).body.creatives[0].action).toBe('created');
      expect((await build(taken, account)).isError).toBe(false);
      expect((await preview(taken, account)).isError).toBe(false);
    }
  });

  it("accepted_values lists each accepted format once, as a full format_id; in a sandbox that seeded formats, those and the operator's", async () => {
    const listed = (await call('list_creative_formats', {})).body.formats.map((f: Json) => f.format_id);
    const refused = (await build({ agent_url: 'https://creative.other-vendor.com', id: 'x' })).body.adcp_error;
    const accepted = refused.details.accepted_values as Json[];
    expect(accepted).toEqual(listed);
    for (const f of accepted) expect(Object.keys(f).sort()).toEqual(['agent_url', 'id']);
    expect(new Set(accepted.map((f) => `${f.agent_url}#${f.id}`)).size).toBe(accepted.length);

    const seeded = await call('comply_test_controller', { scenario: 'seed_creative_format', account: SANDBOX, params: { format_id: 'sandbox_banner', fixture: { name: 'Sandbox banner', type: 'display' } } });
    expect(seeded.body.success).toBe(true);
    const inSandbox = (await sync([{ creative_id: 'x', name: 'x', format_id: { agent_url: 'https://creative.other-vendor.com', id: 'x' }, assets: {} }], SANDBOX)).body.creatives[0].errors[0].details.accepted_values as Json[];
    expect(inSandbox).toEqual([{ agent_url: STANDARD, id: 'sandbox_banner' }, ...listed]);
    // The operator's formats stay taken in that sandbox, by sync_creatives as by build_creative.
    expect((await sync([{ creative_id: 'mpu-in-seeded-sandbox', name: 'x', format_id: MPU, assets: { image: image(300, 250) } }], SANDBOX)).body.creatives[0].action).toBe('created');
    expect((await build(MPU, SANDBOX)).isError).toBe(false);
  });
});
