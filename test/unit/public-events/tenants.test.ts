import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadTenantSecret, tenantKeyer } from '../../../src/public-events/tenants';

/** The operator's tenant secret: made once, then the same for every reader of the file. */
describe('loadTenantSecret', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenant-secret-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('creates the file (owner-only) on first load and reads the same secret after', () => {
    const file = path.join(dir, 'nested', 'public-events-tenant-secret');
    const first = loadTenantSecret(file);
    expect(first.length).toBe(32);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(loadTenantSecret(file).equals(first)).toBe(true);
    expect(tenantKeyer(loadTenantSecret(file))('acme')).toBe(tenantKeyer(first)('acme'));
    expect(fs.readdirSync(path.dirname(file))).toEqual(['public-events-tenant-secret']);
  });

  it('refuses a file that is not a long enough base64url secret', () => {
    const short = path.join(dir, 'short');
    fs.writeFileSync(short, 'c2hvcnQ\n');
    expect(() => loadTenantSecret(short)).toThrow(/at least 32 bytes/);
  });
});
