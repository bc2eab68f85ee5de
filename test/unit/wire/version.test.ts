import { AppError } from '../../../src/shared/errors';
import { adcp30 } from '../../../src/wire/adcp3/answers';
import { validateAdcp3 } from '../../../src/wire/adcp3/schemas';
import { adcp31 as codec31 } from '../../../src/wire/adcp31/answers';
import { codecFor } from '../../../src/wire/codecs';
import { negotiateVersion, SUPPORTED_VERSIONS } from '../../../src/wire/version';
import { adcp31 } from '../../support/adcp31';

type Json = Record<string, any>;

/** What negotiation decided: the release served and whether it is echoed, or the error's code, field and details. */
function outcome(args: Json): Json {
  try {
    return negotiateVersion(args);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return { code: err.code, field: err.field, details: err.details };
  }
}

const SUPPORTED = { supported_versions: ['3.0', '3.1'], supported_majors: [3] };

/**
 * The spec's negotiation table (AdCP 3.1.19 docs/reference/versioning.mdx, "Version negotiation"
 * and "Major-precision negotiation"; core/version-envelope.json), against an agent that serves
 * "3.0" and "3.1".
 */
describe('version negotiation: the spec\'s table', () => {
  it.each<[string, Json, Json]>([
    // Omitted: the server's default release; no echo (a 3.0 buyer's answers are as they were).
    ['no pin, no major', {}, { version: '3.0', pinned: false }],
    // Major only: a 3.0 buyer (@adcp/sdk 6.x sends exactly this); kept on 3.0 (see version.ts).
    ['major only, 3', { adcp_major_version: 3 }, { version: '3.0', pinned: false }],
    // Exact match.
    ['pin 3.0', { adcp_version: '3.0' }, { version: '3.0', pinned: true }],
    ['pin 3.1', { adcp_version: '3.1' }, { version: '3.1', pinned: true }],
    ['pin 3.1 with the major mirrored (the dual-emit the spec asks of buyers)', { adcp_version: '3.1', adcp_major_version: 3 }, { version: '3.1', pinned: true }],
    // Same major, newer (unknown) release: downshift to the highest served ≤ the pin.
    ['pin 3.2 (newer than ours): downshift', { adcp_version: '3.2', adcp_major_version: 3 }, { version: '3.1', pinned: true }],
    ['pin 3.99: downshift', { adcp_version: '3.99' }, { version: '3.1', pinned: true }],
  ])('%s', (_name, args, expected) => {
    expect(outcome(args)).toEqual(expected);
  });

  it.each<[string, Json, Json]>([
    // Different major.
    ['pin 4.0', { adcp_version: '4.0' }, { field: 'adcp_version', details: { adcp_version: '4.0', ...SUPPORTED } }],
    ['pin 4.0 with major 4', { adcp_version: '4.0', adcp_major_version: 4 }, { field: 'adcp_version', details: { adcp_version: '4.0', adcp_major_version: 4, ...SUPPORTED } }],
    ['pin 2.5', { adcp_version: '2.5' }, { field: 'adcp_version', details: { adcp_version: '2.5', ...SUPPORTED } }],
    ['major only, 4', { adcp_major_version: 4 }, { field: 'adcp_major_version', details: { adcp_major_version: 4, ...SUPPORTED } }],
    ['major only, 2', { adcp_major_version: 2 }, { field: 'adcp_major_version', details: { adcp_major_version: 2, ...SUPPORTED } }],
    ['major only, "3" (a string is not the integer, nor echoed as one)', { adcp_major_version: '3' }, { field: 'adcp_major_version', details: { ...SUPPORTED } }],
    // Fields that disagree at the major: malformed, VERSION_UNSUPPORTED.
    ['pin 3.1 with major 4', { adcp_version: '3.1', adcp_major_version: 4 }, { field: 'adcp_major_version', details: { adcp_version: '3.1', adcp_major_version: 4, ...SUPPORTED } }],
    ['pin 4.0 with major 3', { adcp_version: '4.0', adcp_major_version: 3 }, { field: 'adcp_major_version', details: { adcp_version: '4.0', adcp_major_version: 3, ...SUPPORTED } }],
    // Pre-release pins match exactly, never downshift; this agent serves none.
    ['pin 3.1-beta', { adcp_version: '3.1-beta' }, { field: 'adcp_version', details: { adcp_version: '3.1-beta', ...SUPPORTED } }],
    ['pin 3.2-rc.1', { adcp_version: '3.2-rc.1', adcp_major_version: 3 }, { field: 'adcp_version', details: { adcp_version: '3.2-rc.1', adcp_major_version: 3, ...SUPPORTED } }],
  ])('VERSION_UNSUPPORTED, correctable, with supported_versions: %s', (_name, args, expected) => {
    expect(outcome(args)).toEqual({ code: 'VERSION_UNSUPPORTED', ...expected });
  });

  it.each<[string, unknown]>([
    ['a patch', '3.1.19'],
    ['full semver pre-release', '3.1.0-rc.15'],
    ['a v prefix', 'v3.1'],
    ['a bare major', '3'],
    ['a number', 3.1],
    ['null', null],
  ])('a pin that is not a release (%s) is an invalid request, never guessed at', (_name, pin) => {
    expect(outcome({ adcp_version: pin })).toEqual({ code: 'INVALID_REQUEST', field: 'adcp_version', details: { supported_versions: ['3.0', '3.1'] } });
  });

  it('ignores the rest of the envelope: idempotency_key on a read, context, ext', () => {
    expect(negotiateVersion({ adcp_version: '3.1', adcp_major_version: 3, idempotency_key: 'k-0000000000000001', context: { correlation_id: 'c' }, ext: { acme: {} }, brief: 'x' })).toEqual({ version: '3.1', pinned: true });
  });

  it('advertises the releases lowest first, each release-precision', () => {
    expect(SUPPORTED_VERSIONS).toEqual(['3.0', '3.1']);
    for (const v of SUPPORTED_VERSIONS) expect(v).toMatch(/^\d+\.\d+$/);
  });
});

describe('codecs: the release served, echoed', () => {
  it('3.0 answers a call without a pin as it always did, and names itself only when pinned', () => {
    // The release's codec (its task reads wrapped to tell a task's result in the task's release: codecs.ts).
    expect(codecFor()).toMatchObject({ version: '3.0', capabilities: adcp30.capabilities, error: adcp30.error, envelope: adcp30.envelope });
    expect(adcp30.envelope({ version: '3.0', pinned: false })).toEqual({});
    expect(adcp30.envelope({ version: '3.0', pinned: true })).toEqual({ adcp_version: '3.0' });
  });

  it('3.1 names itself on every answer, a downshifted one included', () => {
    expect(codecFor('3.1')).toMatchObject({ version: '3.1', capabilities: codec31.capabilities, error: codec31.error, envelope: codec31.envelope });
    expect(codec31.envelope(negotiateVersion({ adcp_version: '3.7' }))).toEqual({ adcp_version: '3.1' });
  });

  it('VERSION_UNSUPPORTED is correctable and its details follow error-details/version-unsupported.json, valid as 3.0 and 3.1 errors', () => {
    let err: AppError | undefined;
    try {
      negotiateVersion({ adcp_version: '4.0', adcp_major_version: 4 });
    } catch (e) {
      err = e as AppError;
    }
    for (const codec of [adcp30, codec31]) {
      const error = codec.error('get_products', {}, err!);
      expect(error).toEqual({
        code: 'VERSION_UNSUPPORTED',
        message: expect.any(String),
        recovery: 'correctable',
        field: 'adcp_version',
        details: { adcp_version: '4.0', adcp_major_version: 4, supported_versions: ['3.0', '3.1'], supported_majors: [3] },
      });
      expect(validateAdcp3('core/error.json', error)).toMatchObject({ valid: true });
      expect(adcp31().validate('core/error.json', error)).toMatchObject({ valid: true });
      // error-details/version-unsupported.json is not in the 3.1.19 copy; its own rules, by hand:
      // supported_versions required, release-precision strings; supported_majors integers ≥ 1.
      expect(error.details.supported_versions.every((v: string) => /^(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)$/.test(v))).toBe(true);
      expect(error.details.supported_majors.every((m: number) => Number.isInteger(m) && m >= 1)).toBe(true);
      expect(adcp31().validate('core/version-envelope.json', error.details)).toMatchObject({ valid: true });
    }
  });
});
