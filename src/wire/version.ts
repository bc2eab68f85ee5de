import { AppError } from '../shared/errors';

/**
 * AdCP version negotiation: which release a request is answered in. The rules are the spec's
 * (AdCP 3.1.19, `docs/reference/versioning.mdx`, "Version negotiation" and "Major-precision
 * negotiation"; `core/version-envelope.json`; `enums/error-code.json` for VERSION_UNSUPPORTED):
 *
 * - `adcp_version` is a release pin, `MAJOR.MINOR` or `MAJOR.MINOR-PRERELEASE`. A patch
 *   (`"3.1.19"`), a `v` prefix or a bare major is not a wire value: refused as an invalid request
 *   ("will be rejected by validation"), never guessed at.
 * - A pin and an `adcp_major_version` that disagree at the major are malformed:
 *   `VERSION_UNSUPPORTED`.
 * - Another major: `VERSION_UNSUPPORTED`. A pre-release pin is matched exactly (we serve none):
 *   `VERSION_UNSUPPORTED`, never a downshift.
 * - Same major: the pinned release if served, else the highest served release below it (a newer
 *   `3.x` than ours is served as 3.1); none below it: `VERSION_UNSUPPORTED`.
 * - No pin: our default release, 3.0. With `adcp_major_version: 3` alone the spec's rule is "the
 *   highest supported release in that major"; here it is 3.0 too, on purpose: a major-only caller
 *   is a 3.0 buyer (`@adcp/sdk` 6.x sends exactly `adcp_major_version: 3` for its 3.0 pin and
 *   validates answers against 3.0.6), and 3.0 callers must get the answers they always got.
 *   Any other `adcp_major_version` is `VERSION_UNSUPPORTED`, as it always was.
 *
 * Every VERSION_UNSUPPORTED carries `error-details/version-unsupported.json`: what was asked,
 * `supported_versions` (authoritative for the retry) and the deprecated `supported_majors`.
 */

/** The releases this agent answers in, lowest first (what `adcp.supported_versions` advertises). */
export const SUPPORTED_VERSIONS = ['3.0', '3.1'] as const;
export type AdcpRelease = (typeof SUPPORTED_VERSIONS)[number];

/** The release of a request without a pin. */
export const DEFAULT_VERSION: AdcpRelease = '3.0';

/** The majors those releases belong to (`adcp.major_versions`, deprecated but emitted through 3.x). */
export const SUPPORTED_MAJORS: readonly number[] = [...new Set(SUPPORTED_VERSIONS.map((v) => Number(v.split('.')[0])))];

export interface NegotiatedVersion {
  /** The release the answer is in. */
  version: AdcpRelease;
  /**
   * The buyer pinned a release (`adcp_version`), so the answer names the release it was served in
   * (a downshift included). Without a pin, answers are as they were before 3.1: no echo.
   */
  pinned: boolean;
}

/** `core/version-envelope.json`'s pattern for `adcp_version`. */
const RELEASE = /^(\d+)\.(\d+)(?:-([a-zA-Z0-9.-]+))?$/;

/** Longest echo of what the caller sent: a pin is a few characters, and an error names it in several places. */
const ECHO_MAX = 32;

/** What the caller sent, for a message: JSON, cut to ECHO_MAX characters with an ellipsis. */
function shown(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value);
  return json.length > ECHO_MAX ? `${json.slice(0, ECHO_MAX)}…` : json;
}

/**
 * VERSION_UNSUPPORTED with `error-details/version-unsupported.json`. What was asked is echoed in
 * `details` only when it is the envelope's own type and short (the envelope's schema constrains
 * both fields); a longer pin is named in the message alone, cut (see shown).
 */
function unsupported(message: string, field: string, asked: { adcp_version?: unknown; adcp_major_version?: unknown }): AppError {
  return new AppError('VERSION_UNSUPPORTED', message, field, {
    ...(typeof asked.adcp_version === 'string' && asked.adcp_version.length <= ECHO_MAX ? { adcp_version: asked.adcp_version } : {}),
    ...(Number.isSafeInteger(asked.adcp_major_version) ? { adcp_major_version: asked.adcp_major_version } : {}),
    supported_versions: [...SUPPORTED_VERSIONS],
    supported_majors: [...SUPPORTED_MAJORS],
  });
}

const served = () => SUPPORTED_VERSIONS.map((v) => `"${v}"`).join(', ');

/**
 * The release a request is answered in, from its `adcp_version` and `adcp_major_version` (the
 * envelope fields every AdCP 3.x request may carry beside its task's own). Throws
 * VERSION_UNSUPPORTED (or INVALID_REQUEST for a pin that is not a release) as the spec says.
 */
export function negotiateVersion(args: Readonly<Record<string, unknown>>): NegotiatedVersion {
  const pin = args.adcp_version;
  const major = args.adcp_major_version;
  if (pin === undefined) {
    if (major !== undefined && !SUPPORTED_MAJORS.includes(major as number)) {
      throw unsupported(`adcp_major_version ${shown(major)} is not supported; this agent speaks AdCP ${SUPPORTED_MAJORS.join(', ')} (releases ${served()})`, 'adcp_major_version', { adcp_major_version: major });
    }
    return { version: DEFAULT_VERSION, pinned: false };
  }
  const m = typeof pin === 'string' ? RELEASE.exec(pin) : null;
  if (!m) {
    throw new AppError('INVALID_REQUEST', `adcp_version must be a release string, MAJOR.MINOR (e.g. "3.1"), not ${shown(pin)}${typeof pin === 'string' ? ': patches are not negotiated' : ''}; this agent serves ${served()}`, 'adcp_version', { supported_versions: [...SUPPORTED_VERSIONS] });
  }
  const pinMajor = Number(m[1]);
  const pinMinor = Number(m[2]);
  const prerelease = m[3];
  if (major !== undefined && major !== pinMajor) {
    throw unsupported(`adcp_version ${shown(pin)} and adcp_major_version ${shown(major)} disagree on the major version`, 'adcp_major_version', { adcp_version: pin, adcp_major_version: major });
  }
  if (!SUPPORTED_MAJORS.includes(pinMajor)) {
    throw unsupported(`adcp_version ${shown(pin)} is not supported; this agent serves ${served()}`, 'adcp_version', { adcp_version: pin, ...(major !== undefined ? { adcp_major_version: major } : {}) });
  }
  if (prerelease !== undefined) {
    // Pre-release pins are matched exactly, and this agent serves no pre-release.
    const exact = SUPPORTED_VERSIONS.find((v) => v === pin);
    if (exact) return { version: exact, pinned: true };
    throw unsupported(`adcp_version ${shown(pin)} is a pre-release this agent does not serve; it serves ${served()}`, 'adcp_version', { adcp_version: pin, ...(major !== undefined ? { adcp_major_version: major } : {}) });
  }
  // The highest release served at or below the pin, in its major (the exact one when served).
  const below = SUPPORTED_VERSIONS.filter((v) => {
    const [vMajor, vMinor] = v.split('.').map(Number) as [number, number];
    return vMajor === pinMajor && vMinor <= pinMinor;
  });
  const version = below.at(-1);
  if (!version) {
    throw unsupported(`adcp_version ${shown(pin)} is older than every release this agent serves (${served()})`, 'adcp_version', { adcp_version: pin, ...(major !== undefined ? { adcp_major_version: major } : {}) });
  }
  return { version, pinned: true };
}
