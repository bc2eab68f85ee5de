import { allProjections } from '../../projections';
import fs from 'node:fs';
import path from 'node:path';
import { issueApiKey } from '../../src/application/api-keys';
import { eventually } from '../support/infra';
import { graphql, startTestGateway } from '../support/gateway';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

describe('gateway over HTTP (embedded defaults)', () => {
  let gw: Gateway;
  let admin: string;
  let buyer: string;

  beforeAll(async () => {
    gw = await startTestGateway();
    const ctx = { now: new Date().toISOString(), principal: 'test' };
    admin = (await issueApiKey(gw.app.store, { org: 'ops', role: 'admin' }, ctx)).key;
    buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, ctx)).key;
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 15_000, 'readyz');
  });
  afterAll(async () => {
    await gw.stop();
  });

  it('answers /healthz and /readyz with projection status', async () => {
    expect(await (await fetch(`${gw.url}/healthz`)).json()).toEqual({ status: 'ok' });
    const ready = (await (await fetch(`${gw.url}/readyz`)).json()) as { status: string; head: number; projections: { name: string; lag: number }[] };
    expect(ready.status).toBe('ready');
    expect(ready.head).toBeGreaterThanOrEqual(2);
    expect(ready.projections.map((p) => p.name).sort()).toEqual(allProjections.map((p) => p.name).sort());
    expect(ready.projections.every((p) => p.lag === 0)).toBe(true);
  });

  it('answers {__typename} and serves the event log status', async () => {
    const r = await graphql(gw.url, '{ __typename }');
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ __typename: 'Query' });
    // Every answer carries its price and what is left of the caller's points (docs/limits.md).
    expect(r.body).toMatchObject({ extensions: { cost: { requested: expect.any(Number), maximum: 1000, actual: expect.any(Number), throttleStatus: { maximumAvailable: expect.any(Number), currentlyAvailable: expect.any(Number), windowSeconds: 60 } } } });
    const log = await graphql(gw.url, '{ eventLog { store bus headPosition eventTypes { type count } } }');
    expect(log.body.data!.eventLog).toMatchObject({ store: 'sqlite', bus: 'embedded' });
    expect(log.body.data!.eventLog.eventTypes).toContainEqual({ type: 'ApiKeyIssued', count: 2 });
  });

  it('serves the committed OpenAPI document and a docs page for the REST shim', async () => {
    const res = await fetch(`${gw.url}/openapi.json`);
    expect(res.status).toBe(200);
    const served = await res.text();
    const committed = fs.readFileSync(path.join(__dirname, '../../../schema/openapi.json'), 'utf8');
    expect(served).toBe(committed);
    const doc = JSON.parse(served) as { paths: Record<string, { post?: { requestBody: { content: { 'application/json': { schema: { required?: string[] } } } } } }> };
    const create = doc.paths['/api/tasks/create_media_buy']!.post!.requestBody.content['application/json'].schema as { required?: string[]; properties: Record<string, { description?: string }> };
    expect(create.required).toEqual(expect.arrayContaining(['buyer_ref', 'brand_manifest', 'start_time', 'end_time']));
    // packages is required unless a proposal is accepted instead (proposal_id + total_budget).
    expect(create.properties.packages!.description).toMatch(/^Required, unless proposal_id/);
    expect(Object.keys(create.properties)).toEqual(expect.arrayContaining(['proposal_id', 'total_budget']));
    const docs = await fetch(`${gw.url}/docs`);
    expect(docs.headers.get('content-type')).toContain('text/html');
    expect(await docs.text()).toContain('POST /api/tasks/get_media_buy_delivery');
  });

  it('answers an unknown route with 404 and a JSON error', async () => {
    const res = await fetch(`${gw.url}/nope?x=1`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { code: 'NOT_FOUND', message: 'no route for GET /nope' } });
    // Under the registry's paths errors are `{error: string}` (spec §7), unknown routes included.
    for (const [method, path] of [['GET', '/api/registry/nope'], ['GET', '/api/brands/resolve/bulk'], ['POST', '/api/registry/feed']] as const) {
      const r = await fetch(`${gw.url}${path}`, { method });
      expect(r.status).toBe(404);
      expect(await r.json()).toEqual({ error: `no route for ${method} ${path}` });
    }
  });

  it('answers malformed GraphQL with 400, never 5xx', async () => {
    const bad = [
      { body: '{"query": "{ __typename ', type: 'application/json' },
      { body: JSON.stringify({ query: '{ __typename ' }), type: 'application/json' },
      { body: JSON.stringify({ query: '{ noSuchField }' }), type: 'application/json' },
      { body: JSON.stringify({ nothing: true }), type: 'application/json' },
      { body: JSON.stringify({ query: 42 }), type: 'application/json' },
      { body: '', type: 'application/json' },
    ];
    for (const b of bad) {
      const res = await fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': b.type }, body: b.body });
      const json = (await res.json()) as { errors?: { extensions?: { code?: string } }[] };
      expect({ body: b.body, status: res.status, coded: typeof json.errors?.[0]?.extensions?.code }).toEqual({ body: b.body, status: 400, coded: 'string' });
    }
  });

  it('refuses a body over the limit with 413', async () => {
    const res = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }', pad: 'x'.repeat(1_100_000) }),
    });
    expect(res.status).toBe(413);
    // Refused before Apollo sees it, yet still a GraphQL response.
    expect(await res.json()).toEqual({ errors: [{ message: 'request body exceeds the size limit', extensions: { code: 'PAYLOAD_TOO_LARGE' } }] });
  });

  it('serves Prometheus metrics including request counts and projection lag', async () => {
    const res = await fetch(`${gw.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    expect(text).toMatch(/adcp_http_requests_total\{method="GET",route="\/healthz",status="200"\} \d+/);
    expect(text).toMatch(/adcp_projection_lag_events\{projection="api-keys"\} 0/);
  });

  it('rejects an unknown Bearer key with 401 and WWW-Authenticate', async () => {
    const r = await graphql(gw.url, '{ __typename }', undefined, 'sk_AAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB');
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toBe('Bearer error="invalid_token", error_description="unknown or revoked API key"');
    expect(r.body.errors![0]!.extensions!.code).toBe('UNAUTHENTICATED');
  });

  it('lets an admin issue and revoke keys; a buyer gets FORBIDDEN; the new key works after projection', async () => {
    const denied = await graphql(gw.url, 'mutation { issueApiKey(input: {org: "x"}) { key } }', undefined, buyer);
    expect(denied.body.errors![0]!.extensions).toMatchObject({ code: 'FORBIDDEN' });

    const issued = await graphql(
      gw.url,
      'mutation($i: IssueApiKeyInput!) { issueApiKey(input: $i) { keyId key org role } }',
      { i: { org: 'beta', role: 'seller' } },
      admin,
    );
    expect(issued.status).toBe(200);
    const k = issued.body.data!.issueApiKey;
    expect(k).toMatchObject({ org: 'beta', role: 'seller' });
    expect(k.key).toMatch(/^sk_[\w-]{8}_[\w-]{32}$/);
    await eventually(async () => (await graphql(gw.url, '{ __typename }', undefined, k.key)).status === 200, 10_000, 'key usable');

    const list = await graphql(gw.url, '{ apiKeys { keyId org role prefix revokedAt } }', undefined, admin);
    const listed = list.body.data!.apiKeys.find((x: { keyId: string }) => x.keyId === k.keyId);
    expect(listed).toMatchObject({ org: 'beta', role: 'seller', revokedAt: null });
    expect(JSON.stringify(list.body)).not.toContain(k.key.slice(12));

    const revoked = await graphql(gw.url, 'mutation($id: ID!) { revokeApiKey(keyId: $id) }', { id: k.keyId }, admin);
    expect(revoked.body.data).toEqual({ revokeApiKey: true });
    await eventually(async () => (await graphql(gw.url, '{ __typename }', undefined, k.key)).status === 401, 10_000, 'key revoked');

    const again = await graphql(gw.url, 'mutation($id: ID!) { revokeApiKey(keyId: $id) }', { id: k.keyId }, admin);
    expect(again.body.errors![0]!.extensions).toMatchObject({ code: 'INVALID_STATE', field: 'keyId' });
  });

  it('validates GraphQL input with a field-level error', async () => {
    const r = await graphql(gw.url, 'mutation { issueApiKey(input: {org: "bad/org!"}) { key } }', undefined, admin);
    expect(r.body.errors![0]!.extensions).toMatchObject({ code: 'VALIDATION_ERROR', field: 'org' });
  });
});
