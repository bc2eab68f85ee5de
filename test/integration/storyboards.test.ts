import fs from 'node:fs';
import path from 'node:path';
import { ROOT, startTestGateway, tempDir } from '../support/gateway';
import { eventually } from '../support/infra';

/** GET /api/storyboards/{id}: the SDK's bundle plus COMPLIANCE_DIRS (a 3.1.18 copy, an rc, a broken one). */
describe('GET /api/storyboards/{id}', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  const dir = tempDir();
  const rc = path.join(dir, '3.1.0-rc.2');
  const broken = path.join(dir, '3.1.19');

  beforeAll(async () => {
    fs.mkdirSync(path.join(rc, 'universal'), { recursive: true });
    fs.writeFileSync(path.join(rc, 'index.json'), JSON.stringify({ adcp_version: '3.1.0-rc.2', universal: ['only'] }));
    fs.writeFileSync(path.join(rc, 'universal', 'only.yaml'), 'id: rc_only\ntitle: RC only\ncategory: x\nsummary: s\nagent:\n  interaction_model: media_buy_seller\nphases:\n  - title: P\n    steps:\n      - id: s1\n        title: Step one\n');
    fs.mkdirSync(broken, { recursive: true });
    fs.writeFileSync(path.join(broken, 'index.json'), '{ not json');
    const compliance = [path.join(ROOT, 'test', 'fixtures', 'compliance', '3.1.18'), rc, broken].join(',');
    gw = await startTestGateway({ COMPLIANCE_DIRS: compliance, DATA_DIR: path.join(dir, 'data') });
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000, 'readyz');
  }, 60_000);
  afterAll(async () => gw?.stop());

  const get = async (id: string, target?: string) => {
    const r = await fetch(`${gw.url}/api/storyboards/${encodeURIComponent(id)}${target !== undefined ? `?compliance_target=${encodeURIComponent(target)}` : ''}`);
    return { status: r.status, body: (await r.json()) as Record<string, any> };
  };

  it('defaults to the newest stable bundle and answers the spec’s shape: every step has description and expected_output', async () => {
    const r = await get('capability_discovery');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ adcp_version: '3.1.18', requested_compliance_target: '3.1' });
    const s = r.body.storyboard;
    expect(s).toMatchObject({ id: 'capability_discovery', title: 'Capability discovery', category: 'capability_discovery', agent: { interaction_model: expect.any(String) } });
    expect(Array.isArray(s.agent.examples)).toBe(true); // (fetch's arrays come from another realm than expect.any(Array)'s)
    expect(typeof s.summary).toBe('string');
    for (const phase of s.phases) {
      expect(typeof phase.title).toBe('string');
      for (const step of phase.steps) {
        expect(step).toMatchObject({ id: expect.any(String), title: expect.any(String), description: expect.any(String), expected_output: expect.any(String) });
        expect(step.description.length).toBeGreaterThan(0);
      }
    }
    expect(s.phases[0].steps[0].expected_output.length).toBeGreaterThan(0);
    expect(r.body.test_kit).toMatchObject({ id: 'acme_outdoor' });
  });

  it('resolves compliance_target: 3.0 (the SDK’s bundle), 3.1-rc, an exact version; ids with / work encoded', async () => {
    expect((await get('capability_discovery', '3.0')).body).toMatchObject({ adcp_version: '3.0.6', requested_compliance_target: '3.0' });
    expect((await get('rc_only', '3.1-rc')).body).toMatchObject({ adcp_version: '3.1.0-rc.2', storyboard: { id: 'rc_only', phases: [{ steps: [{ description: 'Step one', expected_output: '' }] }] } });
    expect((await get('capability_discovery', '3.1.18')).body.adcp_version).toBe('3.1.18');
    const scenario = await get('media_buy_seller/delivery_reporting', '3.1');
    expect(scenario.status).toBe(200);
    expect(scenario.body.storyboard.id).toBe('media_buy_seller/delivery_reporting');
  });

  it('404 for an unknown id, 400 for an unresolvable target, 500 for a broken bundle, all {error}', async () => {
    expect(await get('no_such_storyboard')).toEqual({ status: 404, body: { error: 'Storyboard not found' } });
    expect(await get('rc_only', '3.1')).toEqual({ status: 404, body: { error: 'Storyboard not found' } });
    for (const t of ['4.0', '3.2', 'latest', '3.1-beta', '3.0.99']) {
      expect(await get('capability_discovery', t)).toEqual({ status: 400, body: { error: 'Invalid compliance_target. Use 3.1, 3.0, 3.1-rc, 3.1-beta, or an exact bundled version.' } });
    }
    expect(await get('capability_discovery', '3.1.19')).toEqual({ status: 500, body: { error: 'Failed to get storyboard' } });
  });

  it('an id past the framework’s 100-character path limit is looked up (404); one over 256 characters is 400 naming the id, on REST and GraphQL', async () => {
    expect(await get('x'.repeat(150))).toEqual({ status: 404, body: { error: 'Storyboard not found' } });
    expect(await get(`media_buy_seller/${'y'.repeat(239)}`)).toEqual({ status: 404, body: { error: 'Storyboard not found' } });
    expect(await get('x'.repeat(257))).toEqual({ status: 400, body: { error: 'id is longer than 256 characters' } });
    expect(await get('x'.repeat(5000))).toEqual({ status: 400, body: { error: 'id is longer than 256 characters' } });
    const r = await fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: 'query($id: String!) { storyboard(id: $id) { id } }', variables: { id: 'x'.repeat(257) } }) });
    const body = (await r.json()) as { errors: { message: string; extensions: Record<string, unknown> }[] };
    expect(body.errors[0]).toMatchObject({ message: 'id is longer than 256 characters', extensions: { code: 'VALIDATION_ERROR', field: 'id' } });
  });

  it('imports each bundle once: a restart with unchanged bundles appends nothing', async () => {
    const before = (await gw.app.store.readAll({ limit: 100_000 })).filter((e) => e.type === 'StoryboardBundleImported').length;
    const env = { COMPLIANCE_DIRS: [path.join(ROOT, 'test', 'fixtures', 'compliance', '3.1.18'), rc].join(','), DATA_DIR: path.join(dir, 'data') };
    await gw.stop();
    gw = await startTestGateway(env);
    const after = (await gw.app.store.readAll({ limit: 100_000 })).filter((e) => e.type === 'StoryboardBundleImported').length;
    expect(after).toBe(before);
  });
});
