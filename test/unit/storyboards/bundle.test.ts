import fs from 'node:fs';
import path from 'node:path';
import { loadBundle, testKitIdOf } from '../../../src/domain/storyboards/bundle';
import { resolveTarget } from '../../../src/domain/storyboards/versions';
import { ROOT } from '../../support/gateway';

const FIXTURES = path.join(ROOT, 'test', 'fixtures', 'compliance');

describe('compliance bundle loader', () => {
  it('serves exactly the reference registry’s 122 storyboard ids for 3.1.18, in its order', () => {
    const expected = fs
      .readFileSync(path.join(FIXTURES, 'storyboard-ids-3.1.18.tsv'), 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => line.split('\t')[2]);
    const bundle = loadBundle(path.join(FIXTURES, '3.1.18'));
    expect(bundle.adcp_version).toBe('3.1.18');
    expect(bundle.storyboards.map((s) => s.id)).toEqual(expected);
    expect(bundle.storyboards.every((s) => s.phases.every((p) => Array.isArray(p.steps)))).toBe(true);
    expect(bundle.test_kits.map((k) => k.id)).toContain('acme_outdoor');
    expect(testKitIdOf(bundle.storyboards.find((s) => s.id === 'capability_discovery')!)).toBe('acme_outdoor');
  });

  it('hashes the files it read: same bundle, same hash', () => {
    expect(loadBundle(path.join(FIXTURES, '3.1.18')).hash).toBe(loadBundle(path.join(FIXTURES, '3.1.18')).hash);
  });

  it('refuses a directory without a readable index.json', () => {
    expect(() => loadBundle(path.join(FIXTURES, 'nope'))).toThrow();
  });
});

describe('compliance_target resolution', () => {
  const available = ['3.0.6', '3.0.25', '3.1.18', '3.1.0-rc.14', '3.1.0-rc.2', '3.1.0-beta.7', '3.2.0-beta.5'];
  it.each([
    [undefined, '3.1.18'],
    ['3.0', '3.0.25'],
    ['3.1', '3.1.18'],
    ['3.1-rc', '3.1.0-rc.14'],
    ['3.1-beta', '3.1.0-beta.7'],
    ['3.2-beta', '3.2.0-beta.5'],
    ['3.1-rc.2', '3.1.0-rc.2'],
    ['3.0.6', '3.0.6'],
    ['3.2', undefined],
    ['3.2-rc', undefined],
    ['4.0', undefined],
    ['latest', undefined],
    ['3.1.19', undefined],
  ])('%s → %s', (target, version) => {
    expect(resolveTarget(target, available)).toBe(version);
  });
});
