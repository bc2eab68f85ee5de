import { canonicalTarget, MalformedTargetUriError, removeDotSegments } from '../../../src/signing/canonical-url';
import { readVector } from '../../support/vectors';

interface Case {
  name: string;
  input_url: string;
  expected_target_uri?: string;
  expected_authority?: string;
  reject?: boolean;
}

const { cases } = readVector<{ cases: Case[] }>('request-signing', 'canonicalization.json');

describe('AdCP URL canonicalization (request-signing/canonicalization.json, shared by the webhook profile)', () => {
  it('has the published 37 cases', () => expect(cases).toHaveLength(37));

  it.each(cases.filter((c) => !c.reject).map((c) => [c.name, c] as const))('%s', (_name, c) => {
    expect(canonicalTarget(c.input_url)).toEqual({ targetUri: c.expected_target_uri, authority: c.expected_authority });
  });

  it.each(cases.filter((c) => c.reject).map((c) => [c.name, c] as const))('rejects %s', (_name, c) => {
    expect(() => canonicalTarget(c.input_url)).toThrow(MalformedTargetUriError);
  });

  it('resolves dot segments as RFC 3986 §5.2.4 does', () => {
    expect(removeDotSegments('/a/b/c/./../../g')).toBe('/a/g');
    expect(removeDotSegments('mid/content=5/../6')).toBe('mid/6');
    expect(removeDotSegments('/..')).toBe('/');
  });

  it('refuses schemes other than http and https', () => {
    expect(() => canonicalTarget('ftp://example.com/x')).toThrow(MalformedTargetUriError);
    expect(() => canonicalTarget('/relative/path')).toThrow(MalformedTargetUriError);
  });
});
