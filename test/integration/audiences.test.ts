import { createHash, randomUUID } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import { audienceStream } from '../../src/domain/audience/audience';
import { graphql, startTestGateway } from '../support/gateway';
import { mcpCall } from '../support/mcp-call';

type Json = Record<string, any>;
const ACCOUNT = { brand: { domain: 'acme-outdoor.com' }, operator: 'pinnacle-media.com' };
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const members = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ external_id: `crm-${from + i}`, hashed_email: sha(`user${from + i}@acme.example`), ...(i % 3 === 0 ? { hashed_phone: sha(`+1206555${from + i}`) } : {}) }));

/**
 * sync_audiences over MCP (AdCP 3.0): hashed members matched on arrival against the seller's
 * (simulated) user graph, counts and status per audience, discovery, deletion, and no identifier
 * kept in the log. Every success is checked against the 3.0 response schema.
 */
describe('sync_audiences', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let buyer: string;
  let other: string;
  let accountId: string;

  const call = (name: string, args: Json, key = buyer) => mcpCall(gw.url, key, name, args);
  const sync = (args: Json, key = buyer) => call('sync_audiences', { account: ACCOUNT, idempotency_key: randomUUID(), ...args }, key);

  beforeAll(async () => {
    gw = await startTestGateway();
    const ctx = { now: new Date().toISOString() };
    buyer = (await issueApiKey(gw.app.store, { org: 'audiences-acme', role: 'buyer' }, ctx)).key;
    other = (await issueApiKey(gw.app.store, { org: 'audiences-globex', role: 'buyer' }, ctx)).key;
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
    accountId = (await call('sync_accounts', { accounts: [{ ...ACCOUNT, billing: 'operator' }], idempotency_key: randomUUID() })).body.accounts[0].account_id;
    await call('sync_accounts', { accounts: [{ ...ACCOUNT, billing: 'operator' }], idempotency_key: randomUUID() }, other);
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it('creates an audience, matches its members, and reports counts; too small until enough match', async () => {
    const small = await sync({ audiences: [{ audience_id: 'loyal', name: 'Loyal customers', audience_type: 'crm', add: members(10) }] });
    expect(small.body.audiences[0]).toMatchObject({ audience_id: 'loyal', action: 'created', status: 'too_small', uploaded_count: 10, total_uploaded_count: 10, minimum_size: 100 });
    const big = await sync({ audiences: [{ audience_id: 'loyal', add: members(290, 10) }] });
    const a = big.body.audiences[0];
    expect(a).toMatchObject({ action: 'updated', status: 'ready', uploaded_count: 290, total_uploaded_count: 300, name: 'Loyal customers' });
    expect(a).not.toHaveProperty('minimum_size');
    // About 70 % of e-mails and 50 % of phones are in the simulated graph; a member matches by either.
    expect(a.matched_count).toBeGreaterThan(180);
    expect(a.matched_count).toBeLessThan(270);
    expect(a.effective_match_rate).toBeCloseTo(a.matched_count / 300, 3);
    const email = a.match_breakdown.find((b: Json) => b.id_type === 'hashed_email');
    expect(email.submitted).toBe(300);
    expect(a.match_breakdown.find((b: Json) => b.id_type === 'hashed_phone').submitted).toBe(4 + 97);
    // The same members again change nothing.
    expect((await sync({ audiences: [{ audience_id: 'loyal', add: members(5) }] })).body.audiences[0]).toMatchObject({ action: 'unchanged', total_uploaded_count: 300 });
  });

  it('removes members (remove wins over add in one request), lists on discovery, deletes', async () => {
    const r = await sync({ audiences: [{ audience_id: 'loyal', add: members(3, 1000), remove: [...members(50), members(1, 1000)[0]] }] });
    expect(r.body.audiences[0]).toMatchObject({ action: 'updated', total_uploaded_count: 252 });
    await sync({ audiences: [{ audience_id: 'lapsed', name: 'Lapsed', audience_type: 'suppression', add: members(4, 5000) }] });
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
    const listed = await sync({});
    expect(listed.body.audiences.map((x: Json) => [x.audience_id, x.action, x.uploaded_count])).toEqual([
      ['lapsed', 'unchanged', 0],
      ['loyal', 'unchanged', 0],
    ]);
    // Another buyer's account with the same brand and operator is its own: it sees none of these.
    expect((await sync({}, other)).body.audiences).toEqual([]);
    const del = await sync({ audiences: [{ audience_id: 'lapsed', delete: true }, { audience_id: 'never-was', delete: true }] });
    expect(del.body.audiences).toEqual([
      { audience_id: 'lapsed', seller_id: expect.stringMatching(/^aud_/), action: 'deleted' },
      { audience_id: 'never-was', action: 'failed', errors: [expect.objectContaining({ code: 'REFERENCE_NOT_FOUND' })] },
    ]);
    // delete_missing removes what the request does not name.
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
    const kept = await sync({ audiences: [{ audience_id: 'vip', add: members(2, 9000) }], delete_missing: true });
    expect(kept.body.audiences.map((x: Json) => [x.audience_id, x.action])).toEqual([
      ['vip', 'created'],
      ['loyal', 'deleted'],
    ]);
  });

  it('keeps no identifier: the log holds fingerprints and identifier types, never a hash or external_id', async () => {
    const events = await gw.app.store.readStream(audienceStream(accountId, 'vip'));
    const text = JSON.stringify(events.map((e) => e.data));
    for (const m of members(2, 9000)) {
      expect(text).not.toContain(m.hashed_email);
      expect(text).not.toContain(m.external_id);
    }
    expect(text).toContain('hashed_email');
  });

  it('refuses bad requests with the field at fault', async () => {
    const cases: [Json, string, string][] = [
      [{ account: undefined, audiences: [{ audience_id: 'x' }] }, 'INVALID_REQUEST', 'account'],
      [{ audiences: [{ audience_id: 'x', add: [{ external_id: 'a', hashed_email: 'not-a-hash' }] }] }, 'VALIDATION_ERROR', 'audiences[0].add[0].hashed_email'],
      [{ audiences: [{ audience_id: 'x', add: [{ external_id: 'a' }] }] }, 'VALIDATION_ERROR', 'audiences[0].add[0]'],
      [{ audiences: [{ audience_id: 'x' }, { audience_id: 'x' }] }, 'VALIDATION_ERROR', 'audiences[1].audience_id'],
      [{ delete_missing: true }, 'VALIDATION_ERROR', 'delete_missing'],
      [{ account: { brand: { domain: 'never-synced.com' }, operator: 'nobody.com' }, audiences: [{ audience_id: 'x' }] }, 'ACCOUNT_NOT_FOUND', 'account'],
    ];
    for (const [args, code, field] of cases) {
      const r = await call('sync_audiences', { account: ACCOUNT, idempotency_key: randomUUID(), ...args });
      expect({ args, error: r.body.adcp_error }).toEqual({ args, error: expect.objectContaining({ code, field }) });
    }
    expect((await call('sync_audiences', { account: ACCOUNT, audiences: [{ audience_id: 'x' }] })).body.adcp_error).toMatchObject({ code: 'INVALID_REQUEST', field: 'idempotency_key' });
  });

  it('GraphQL: syncAudiences and accounts', async () => {
    const r = await graphql(gw.url, 'mutation($r: JSONObject!) { syncAudiences(request: $r) }', { r: { account: ACCOUNT, audiences: [{ audience_id: 'gql', add: members(1) }] } }, other);
    expect(r.body.errors).toBeUndefined();
    expect(r.body.data!.syncAudiences.audiences[0]).toMatchObject({ audience_id: 'gql', action: 'created' });
    const accounts = await graphql(gw.url, '{ accounts }', {}, other);
    expect(accounts.body.data!.accounts.accounts).toHaveLength(1);
  });
});
