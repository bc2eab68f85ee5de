import { createPublicKey, timingSafeEqual, verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import { parseDictionary, serializeInnerList, type InnerList } from 'structured-headers';
import { LRUCache } from 'lru-cache';
import { cachedCanonicalTarget, MalformedTargetUriError } from './canonical-url';
import { sha256 } from './content-digest';
import { parseStrictJson } from './strict-json';
import { MAX_SIGNATURE_VALIDITY_SECONDS, type SignatureAlgorithm } from './webhook-signer';

/**
 * One RFC 9421 verifier for AdCP's two signing profiles, webhooks (seller → buyer) and requests
 * (buyer → seller): the same checklist (security.mdx), with what differs between them (tag,
 * covered components, key purpose, error-code namespace, body checks) in a SignatureProfile.
 */
export interface SignatureProfile {
  /** The error-code namespace: `<prefix>_signature_*`, `<prefix>_target_uri_malformed`. */
  prefix: 'webhook' | 'request';
  tag: string;
  /** Components every signature must cover. */
  mandatory: readonly string[];
  /** `content-type` must be covered too when there is a body (requests). */
  contentTypeWithBody: boolean;
  /** Whether `content-digest` must, may or must not be covered. */
  contentDigest: 'required' | 'either' | 'forbidden';
  /** The `adcp_use` values whose keys may sign this profile. */
  purposes: ReadonlySet<string>;
  /** A raw (non-A-label) host on the wire is refused at parsing (requests), not canonicalized. */
  asciiHostOnly: boolean;
  /** Step 14: refuse a body whose JSON has duplicate keys (webhooks). */
  strictJsonBody: boolean;
  /** Live nonces one keyid may hold when the caller sets no cap. */
  defaultPerKeyidCap: number;
}

export class SignatureVerificationError<C extends string = string> extends Error {
  constructor(
    readonly code: C,
    readonly step: string,
    message?: string,
  ) {
    super(message ?? code);
  }
}

/**
 * Seen nonces for the validity window, per scope: one signing key (keyid) of one verified sender
 * at one receiver (VerifierOptions.replayScope), so senders that publish the same kid, or one
 * sender at two endpoints, never share nonces or a cap. Shared by every instance of a receiver.
 */
export interface ReplayStore {
  /** How many live nonces the scope holds (the per-keyid cap, step 9a), answered without a scan of them. */
  count(scope: string, now: number): Promise<number>;
  has(scope: string, nonce: string, now: number): Promise<boolean>;
  /** Records the nonce until `expiresAt` (unix seconds); false when it was already there. */
  insert(scope: string, nonce: string, expiresAt: number, now: number): Promise<boolean>;
}

/** One scope's nonces by value and by the second they expire (the expired are dropped by the second, not found by a scan). */
interface MemoryScope {
  expiries: Map<string, number>;
  byExpiry: Map<number, string[]>;
  sweptAt: number;
}

/** A single-process replay store (the CLI, tests). Receivers that run as several instances use the database one. */
export class MemoryReplayStore implements ReplayStore {
  private scopes = new Map<string, MemoryScope>();
  async count(scope: string, now: number): Promise<number> {
    return this.countNow(scope, now);
  }
  async has(scope: string, nonce: string, now: number): Promise<boolean> {
    const exp = this.scopes.get(scope)?.expiries.get(nonce);
    return exp !== undefined && exp > now;
  }
  async insert(scope: string, nonce: string, expiresAt: number, now: number): Promise<boolean> {
    return this.insertNow(scope, nonce, expiresAt, now);
  }
  /** count, answered synchronously (verifySignature calls it directly, without a promise to await). */
  countNow(scope: string, now: number): number {
    const s = this.scopes.get(scope);
    if (!s) return 0;
    // Once a second at most: the seconds gone by are dropped with their nonces, each nonce once.
    if (s.sweptAt < now) {
      s.sweptAt = now;
      for (const [exp, nonces] of s.byExpiry) {
        if (exp > now) continue;
        for (const n of nonces) if (s.expiries.get(n) === exp) s.expiries.delete(n);
        s.byExpiry.delete(exp);
      }
    }
    return s.expiries.size;
  }
  /** insert, answered synchronously. */
  insertNow(scope: string, nonce: string, expiresAt: number, now: number): boolean {
    let s = this.scopes.get(scope);
    const exp = s?.expiries.get(nonce);
    if (exp !== undefined && exp > now) return false;
    if (!s) this.scopes.set(scope, (s = { expiries: new Map(), byExpiry: new Map(), sweptAt: 0 }));
    s.expiries.set(nonce, expiresAt);
    const second = s.byExpiry.get(expiresAt);
    if (second) second.push(nonce);
    else s.byExpiry.set(expiresAt, [nonce]);
    return true;
  }
}

/**
 * The store itself when it is a MemoryReplayStore whose count and insert are its own (not a
 * subclass's overrides), so verifySignature may call countNow / insertNow without awaiting.
 */
function synchronousStore(replay: ReplayStore): MemoryReplayStore | undefined {
  return replay instanceof MemoryReplayStore && replay.count === MemoryReplayStore.prototype.count && replay.insert === MemoryReplayStore.prototype.insert ? replay : undefined;
}

export interface VerifierOptions {
  /** The sender's key by keyid (the JWKS its brand.json names, refetched once on a miss by the caller). */
  resolveKey(keyid: string): Promise<JsonWebKey | undefined>;
  replay: ReplayStore;
  /** Revoked kids and whether the revocation list is past its refresh deadline. */
  revocation?: { revokedKids: ReadonlySet<string>; stale: boolean };
  /** Live nonces one keyid may hold (in its scope) before it is refused (the profile's default otherwise). */
  perKeyidCap?: number;
  /**
   * Whose nonces these are, prefixed to the keyid in the replay store: the verified sender and the
   * endpoint receiving (`webhook:<endpoint>:`), so a sender publishing another's kid can neither
   * spend that sender's nonces nor fill its cap. Default: none (one receiver, one sender).
   */
  replayScope?: string;
  /**
   * Leave the nonce unspent: the caller checks what else the request must pass (the receiver's
   * envelope) and then spends it with spendNonce, so a request refused for anything does not use
   * up its nonce. Default: spent as the checklist's last step.
   */
  deferNonce?: boolean;
  /**
   * Awaited once the signature verified, before the body's own checks (its digest, strict JSON):
   * a receiver queues large bodies there, so their milliseconds of CPU come one at a time, each
   * in a turn of the event loop of its own (src/shared/cpu-lane.ts).
   */
  beforeBodyChecks?: () => Promise<void>;
  /** Unix seconds (default: now). */
  now?: number;
}

export interface SignedRequest {
  method: string;
  /** The URL as received (scheme, host, path and query). */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer | string;
}

export interface VerifiedSignature {
  keyid: string;
  alg: SignatureAlgorithm;
  nonce: string;
  created: number;
  expires: number;
  /** What JSON.parse made of the body, when the profile checked its JSON (webhooks, step 14). */
  parsedBody?: { value: unknown };
}

const SKEW_SECONDS = 60;
/**
 * Imported public keys by their key material (kty, crv, x, y), not by JWK object: a KeyObject is a
 * function of those members alone, so a rotated key (new material under an old kid) can only miss,
 * and resolvers that build a fresh JWK per request (publisher pins) still hit. The kid, purpose
 * and fit checks run on the resolved JWK every time; this only saves createPublicKey.
 */
const publicKeys = new LRUCache<string, KeyObject>({ max: 1000 });

function publicKeyOf(jwk: JsonWebKey): KeyObject {
  const { kty, crv, x, y } = jwk as { kty: string; crv: string; x: string; y?: string };
  const id = `${kty}|${crv}|${x}|${y ?? ''}`;
  let key = publicKeys.get(id);
  if (key === undefined) {
    key = createPublicKey({ key: { kty, crv, x, ...(y ? { y } : {}) }, format: 'jwk' });
    publicKeys.set(id, key);
  }
  return key;
}
const ALGORITHMS: ReadonlySet<string> = new Set(['ed25519', 'ecdsa-p256-sha256']);
const STRING_PARAMS = ['nonce', 'keyid', 'alg', 'tag'] as const;

const fail = (code: string, step: string, message?: string): never => {
  throw new SignatureVerificationError(code, step, message);
};

/** Header values by lowercase name (repeated lines joined as HTTP does). */
export function lowerHeaders(h: SignedRequest['headers']): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out.set(k.toLowerCase(), Array.isArray(v) ? v.join(', ') : v);
  return out;
}

/** Top-level members of an RFC 8941 dictionary as [key, raw value], in order (parsers keep only the last duplicate). */
function dictionaryMembers(value: string): [string, string][] {
  const members: [string, string][] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  const take = (end: number) => {
    const member = value.slice(start, end).trim();
    const eq = member.search(/[=;]/);
    members.push(eq < 0 ? [member, ''] : [member.slice(0, eq), member[eq] === '=' ? member.slice(eq + 1) : '']);
  };
  // Only a comma splits members: without one the walk below would find the whole value.
  if (!value.includes(',')) {
    take(value.length);
    return members;
  }
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      take(i);
      start = i + 1;
    }
  }
  take(value.length);
  return members;
}

const dictionaryKeys = (value: string) => dictionaryMembers(value).map(([k]) => k);

const SF_CHARS = '[\\x20\\x21\\x23-\\x5B\\x5D-\\x7E]*';
const SF_STRING = `"${SF_CHARS}"`;
/** An inner list of plain strings with integer / plain-string parameters, exactly as RFC 8941 serializes it. */
const CANONICAL_SIG_INPUT = new RegExp(`^\\(((?:${SF_STRING}(?: ${SF_STRING})*)?)\\)((?:;[a-z*][a-z0-9_.*-]*=(?:-?\\d{1,15}|${SF_STRING}))*)$`);

/** A Signature or Signature-Input header that does not parse (step 1, in the profile's namespace). */
class MalformedHeader extends Error {}

/**
 * sig1's covered components, parameters and serialized `@signature-params`. The common,
 * canonically serialized form is read directly (its text is its serialization); anything else
 * goes through the full RFC 8941 parser and is re-serialized.
 */
function parseSig1(raw: string): { components: unknown[]; params: Map<string, unknown>; serialized: string } {
  const usual = USUAL_SIG1.exec(raw);
  if (usual) {
    const params = new Map<string, unknown>();
    for (let i = 0; i < USUAL_PARAMS.length; i++) params.set(USUAL_PARAMS[i]!, i < 2 ? Number(usual[i + 1]) : usual[i + 1]);
    return { components: [...USUAL_COMPONENTS], params, serialized: raw };
  }
  const scanned = scanCanonicalSig1(raw);
  if (scanned) return { ...scanned, serialized: raw };
  const m = CANONICAL_SIG_INPUT.exec(raw);
  if (m) {
    const components = [...m[1]!.matchAll(/"([^"]*)"/g)].map((x) => x[1]!);
    const params = new Map<string, unknown>();
    for (const p of m[2]!.matchAll(/;([a-z*][a-z0-9_.*-]*)=(-?\d{1,15}|"[^"]*")/g)) {
      if (params.has(p[1]!)) throw new MalformedHeader(`parameter ${p[1]} appears twice`);
      params.set(p[1]!, p[2]!.startsWith('"') ? p[2]!.slice(1, -1) : Number(p[2]));
    }
    return { components, params, serialized: raw };
  }
  const member = parseDictionary(`sig1=${raw}`).get('sig1');
  if (!member || !Array.isArray(member[0])) throw new Error('sig1 is not an inner list');
  const list = member as InnerList;
  return { components: list[0].map(([item]) => item), params: list[1] as Map<string, unknown>, serialized: serializeInnerList(list) };
}

/**
 * The Signature-Input every AdCP webhook signer sends (ours, `@adcp/sdk`'s): the profile's five
 * components and six parameters in this order. One regex exec reads it; it is a special case of
 * CANONICAL_SIG_INPUT, so the answer is the one the general path would give.
 */
const USUAL_COMPONENTS = ['@method', '@target-uri', '@authority', 'content-type', 'content-digest'] as const;
const USUAL_PARAMS = ['created', 'expires', 'nonce', 'keyid', 'alg', 'tag'] as const;
const USUAL_SIG1 = new RegExp(
  `^\\(${USUAL_COMPONENTS.map((c) => `"${c}"`).join(' ')}\\);created=(-?\\d{1,15});expires=(-?\\d{1,15});nonce="(${SF_CHARS})";keyid="(${SF_CHARS})";alg="(${SF_CHARS})";tag="(${SF_CHARS})"$`,
);

/** sf-string content (printable ASCII but `"` and `\`), a key's first and later characters. */
const isStringChar = (c: number) => c >= 0x20 && c <= 0x7e && c !== 0x22 && c !== 0x5c;
const isKeyStart = (c: number) => (c >= 0x61 && c <= 0x7a) || c === 0x2a;
const isKeyChar = (c: number) => isKeyStart(c) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x2e || c === 0x2d;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

/**
 * The CANONICAL_SIG_INPUT path of parseSig1 in one pass over the characters, without the regex's
 * match arrays and iterators (a tenth of the verifier's own time). Accepts a subset of what that
 * regex accepts and answers the same for it; anything else (a repeated parameter, an empty list,
 * a sixteen-digit number) is undefined and goes the regex way, which decides it as before.
 */
function scanCanonicalSig1(raw: string): { components: string[]; params: Map<string, unknown> } | undefined {
  const n = raw.length;
  if (raw.charCodeAt(0) !== 0x28 /* ( */) return undefined;
  const components: string[] = [];
  let i = 1;
  for (;;) {
    if (raw.charCodeAt(i) !== 0x22) return undefined;
    const start = ++i;
    while (i < n && isStringChar(raw.charCodeAt(i))) i++;
    if (raw.charCodeAt(i) !== 0x22) return undefined;
    components.push(raw.slice(start, i++));
    const c = raw.charCodeAt(i);
    if (c === 0x29 /* ) */) break;
    if (c !== 0x20) return undefined;
    i++;
  }
  i++;
  const params = new Map<string, unknown>();
  while (i < n) {
    if (raw.charCodeAt(i++) !== 0x3b /* ; */ || !isKeyStart(raw.charCodeAt(i))) return undefined;
    const keyStart = i++;
    while (i < n && isKeyChar(raw.charCodeAt(i))) i++;
    const key = raw.slice(keyStart, i);
    if (raw.charCodeAt(i++) !== 0x3d /* = */ || params.has(key)) return undefined;
    if (raw.charCodeAt(i) === 0x22) {
      const start = ++i;
      while (i < n && isStringChar(raw.charCodeAt(i))) i++;
      if (raw.charCodeAt(i) !== 0x22) return undefined;
      params.set(key, raw.slice(start, i++));
    } else {
      const start = i;
      if (raw.charCodeAt(i) === 0x2d) i++;
      const digits = i;
      while (i < n && isDigit(raw.charCodeAt(i))) i++;
      if (i === digits || i - digits > 15) return undefined;
      params.set(key, Number(raw.slice(start, i)));
    }
  }
  return { components, params };
}

/**
 * webhook-v1 binary values are unpadded base64url, though standard base64 is accepted as
 * published vectors and older SDKs use it; a token mixing the two alphabets is malformed.
 */
const URL_SAFE_ONLY = /^[A-Za-z0-9_-]*$/;
const URL_SAFE_CHAR = /[-_]/;

export function decodeBinary(token: string): Buffer | undefined {
  // What every signer sends, base64url without padding (or alphanumerics alone): two native
  // regex tests decide it as the loop below would, without stepping through it in JavaScript.
  if (URL_SAFE_ONLY.test(token)) return Buffer.from(token, URL_SAFE_CHAR.test(token) ? 'base64url' : 'base64');
  return decodeBinaryScan(token);
}

/** decodeBinary by one pass over the characters (exported for the test pinning the fast path to it). */
export function decodeBinaryScan(token: string): Buffer | undefined {
  // One pass noting which alphabet-specific characters occur (four regexes before).
  let urlSafe = false;
  let standard = false;
  let padded = false;
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i);
    if ((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39)) continue;
    if (c === 0x2d || c === 0x5f) urlSafe = true;
    else if (c === 0x2b || c === 0x2f) standard = true;
    else if (c === 0x3d) padded = true;
    else return undefined;
  }
  if (urlSafe && (standard || padded)) return undefined;
  return Buffer.from(token, urlSafe ? 'base64url' : 'base64');
}

/** A header of one `sig1` byte sequence, the form every signer sends. */
const LONE_SIG1 = /^\s*sig1=:([^:]*):\s*$/;

/** The `sig1` member of the Signature header (sf-binary with a base64url payload), strictly. */
function signatureValue(value: string): Buffer {
  // With no comma there is one member and no duplicate label: the loop below would test just it.
  const lone = value.includes(',') ? null : LONE_SIG1.exec(value);
  if (lone) {
    const bytes = decodeBinary(lone[1]!);
    if (!bytes || bytes.length === 0) throw new MalformedHeader('Signature value is not base64url');
    return bytes;
  }
  const keys = dictionaryKeys(value);
  if (new Set(keys).size !== keys.length) throw new MalformedHeader('duplicate Signature label');
  for (const member of value.split(',')) {
    const m = /^\s*([a-z*][a-z0-9_.*-]*)=:([^:]*):\s*$/.exec(member);
    if (!m) throw new MalformedHeader('Signature is not a dictionary of byte sequences');
    if (m[1] === 'sig1') {
      const bytes = decodeBinary(m[2]!);
      if (!bytes || bytes.length === 0) throw new MalformedHeader('Signature value is not base64url');
      return bytes;
    }
  }
  throw new MalformedHeader('no sig1 member in Signature');
}

/** Step 8: what the key may be used for. Undefined when it fits, else why not. */
function keyMisfit(jwk: JsonWebKey & { adcp_use?: string; key_ops?: string[] }, alg: string, profile: SignatureProfile): string | undefined {
  if (jwk.use !== undefined && jwk.use !== 'sig') return 'JWK use is not sig';
  if (jwk.key_ops !== undefined && !jwk.key_ops.includes('verify')) return 'JWK key_ops lacks verify';
  if (!profile.purposes.has(jwk.adcp_use ?? '')) return `adcp_use ${jwk.adcp_use ?? '(absent)'} cannot sign ${profile.prefix}s`;
  const fits = alg === 'ed25519' ? jwk.kty === 'OKP' && jwk.crv === 'Ed25519' && (jwk.alg === undefined || jwk.alg === 'EdDSA') : jwk.kty === 'EC' && jwk.crv === 'P-256' && (jwk.alg === undefined || jwk.alg === 'ES256');
  return fits ? undefined : `the key does not fit alg ${alg}`;
}

/**
 * Whether a single-valued field arrived as several: a comma followed by an even number of quotes
 * (outside quoted strings when they pair up). Counted in two passes: the lookahead regex this
 * replaces re-read the rest of the value from every comma (15,000 commas and a quote: 179 ms).
 */
export function hasSeveralValues(value: string): boolean {
  const first = value.indexOf(',');
  if (first === -1) return false;
  let quotesAfter = 0;
  for (let q = value.indexOf('"', first); q !== -1; q = value.indexOf('"', q + 1)) quotesAfter++;
  for (let i = first; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x22 /* " */) quotesAfter--;
    else if (c === 0x2c /* , */ && quotesAfter % 2 === 0) return true;
  }
  return false;
}

/** A Content-Digest of one sha-256 member (what every signer sends), its value captured. */
const LONE_SHA256 = /^\s*sha-256=:([^:,]*):\s*$/;

/** Covered fields with one value by definition (RFC 9110, RFC 9530): a second one is ambiguous. */
function multiValued(headers: Map<string, string>, components: readonly unknown[]): string | undefined {
  if (components.includes('content-type') && hasSeveralValues(headers.get('content-type') ?? '')) return 'Content-Type has more than one value';
  if (components.includes('content-digest') && !LONE_SHA256.test(headers.get('content-digest') ?? '')) {
    const keys = dictionaryKeys(headers.get('content-digest') ?? '').map((k) => k.toLowerCase());
    if (new Set(keys).size !== keys.length) return 'Content-Digest names one algorithm twice';
  }
  return undefined;
}

/**
 * The AdCP verifier checklist (security.mdx, "Verifier checklist" for requests and for webhooks),
 * in its order: header parsing (1), parameters (2–5), covered components (6), key resolution and
 * purpose (7–8), revocation and the per-keyid cap before any signature work (9, 9a: a counter
 * read, never a scan of the nonces), the signature over a base rebuilt from canonical components
 * (10), the digest of the received bytes (11), for webhooks duplicate JSON keys (14), and last
 * replay (12–13): the nonce is spent only once everything else passed (with `deferNonce`, once the
 * caller's own checks passed too: spendNonce), so a refused request never uses one up.
 * Nonces and the cap are counted per `replayScope` and keyid. Throws SignatureVerificationError
 * with the spec's code.
 */
export async function verifySignature(req: SignedRequest, profile: SignatureProfile, options: VerifierOptions): Promise<VerifiedSignature> {
  const now = options.now ?? Math.floor(Date.now() / 1000);
  // A well-formed string is read as is (hashed as its UTF-8 bytes, scanned as text) instead of
  // encoded here and decoded again at step 14; one with lone surrogates is first made the bytes
  // it would be sent as, so both steps see what was signed.
  const body: Buffer | string = typeof req.body !== 'string' ? req.body : (req.body as string & { isWellFormed(): boolean }).isWellFormed() ? req.body : Buffer.from(req.body);
  const code = (suffix: string) => `${profile.prefix}_signature_${suffix}`;
  const malformed = (step: string, message: string) => fail(code('header_malformed'), step, message);

  // 1. Signature-Input and Signature, both present, strictly parsed; only `sig1` counts.
  const headers = lowerHeaders(req.headers);
  const inputHeader = headers.get('signature-input');
  const sigHeader = headers.get('signature');
  if (!inputHeader || !sigHeader) malformed('1', 'Signature-Input and Signature must come together');
  const inputMembers = dictionaryMembers(inputHeader!);
  if (inputMembers.length > 1 && new Set(inputMembers.map(([k]) => k)).size !== inputMembers.length) malformed('1', 'duplicate Signature-Input label');
  let sig1: ReturnType<typeof parseSig1>;
  let signature: Buffer;
  try {
    // Other labels are ignored, but the header as a whole must still be a valid dictionary.
    if (inputMembers.length > 1) parseDictionary(inputHeader!);
    const raw = inputMembers.find(([k]) => k === 'sig1')?.[1];
    if (raw === undefined) throw new MalformedHeader('no sig1 in Signature-Input');
    sig1 = parseSig1(raw);
    signature = signatureValue(sigHeader!);
  } catch (err) {
    return malformed('1', err instanceof MalformedHeader ? err.message : 'Signature-Input is not a valid RFC 8941 dictionary with sig1');
  }
  const components = sig1.components;
  if (components.some((c) => typeof c !== 'string')) malformed('1', 'covered components must be strings');
  const ambiguous = multiValued(headers, components);
  if (ambiguous) malformed('1', ambiguous);
  // A raw U-label host could canonicalize two ways (UTS-46 variants): refused, not guessed at.
  if (profile.asciiHostOnly && /^[^:]*:\/\/[^/?#]*[^\x00-\x7f]/.test(req.url)) malformed('1', 'the host must be in A-label (punycode) form');
  const params = sig1.params;

  // A string parameter sent as a bare token (keyid=abc) is not the profile's serialization.
  for (const k of STRING_PARAMS) if (params.has(k) && typeof params.get(k) !== 'string') malformed('1', `${k} must be a quoted string`);

  // 2. Every parameter present, with the right types.
  const str = (k: string) => (typeof params.get(k) === 'string' ? (params.get(k) as string) : undefined);
  const int = (k: string) => (Number.isInteger(params.get(k)) ? (params.get(k) as number) : undefined);
  const created = int('created');
  const expires = int('expires');
  const nonce = str('nonce');
  const keyid = str('keyid');
  const alg = str('alg');
  const tag = str('tag');
  if (created === undefined || expires === undefined || !nonce || !keyid || !alg || tag === undefined) {
    fail(code('params_incomplete'), '2', 'created, expires, nonce, keyid, alg and tag are all required');
  }
  // 3–5. Profile tag, algorithm allowlist, validity window.
  if (tag !== profile.tag) fail(code('tag_invalid'), '3', `tag must be ${profile.tag}`);
  if (!ALGORITHMS.has(alg!)) fail(code('alg_not_allowed'), '4', `alg ${alg} is not allowed`);
  if (expires! <= created! || created! > now + SKEW_SECONDS || expires! < now - SKEW_SECONDS || expires! - created! > MAX_SIGNATURE_VALIDITY_SECONDS) {
    fail(code('window_invalid'), '5', 'signature outside its validity window');
  }
  // 6. The components the profile fixes, and content-digest as its policy says.
  for (const c of profile.mandatory) if (!components.includes(c)) fail(code('components_incomplete'), '6', `${c} is not covered`);
  if (profile.contentTypeWithBody && body.length > 0 && !components.includes('content-type')) fail(code('components_incomplete'), '6', 'content-type is not covered, and there is a body');
  const digestCovered = components.includes('content-digest');
  if (profile.contentDigest === 'required' && !digestCovered) fail(code('components_incomplete'), '6', 'content-digest is not covered');
  if (profile.contentDigest === 'forbidden' && digestCovered) fail(code('components_unexpected'), '6', 'content-digest must not be covered here');

  // 7–8. The key, and what it may be used for.
  const jwk = await options.resolveKey(keyid!);
  if (!jwk) fail(code('key_unknown'), '7', `unknown keyid ${keyid}`);
  const misfit = keyMisfit(jwk!, alg!, profile);
  if (misfit) fail(code('key_purpose_invalid'), '8', misfit);

  // 9, 9a. Revocation and the per-keyid cap, before spending anything on crypto.
  if (options.revocation?.revokedKids.has(keyid!)) fail(code('key_revoked'), '9', `key ${keyid} is revoked`);
  if (options.revocation?.stale) fail(code('revocation_stale'), '9', 'the revocation list is stale');
  // The spec puts the cap before the crypto (an abusive signer past it costs no verify), so this
  // read must cost less than a verify whatever the scope holds: the stores count without a scan.
  const syncReplay = synchronousStore(options.replay);
  const scope = options.replayScope === undefined ? keyid! : options.replayScope + keyid!;
  const live = syncReplay ? syncReplay.countNow(scope, now) : await options.replay.count(scope, now);
  if (live >= (options.perKeyidCap ?? profile.defaultPerKeyidCap)) fail(code('rate_abuse'), '9a', `too many live nonces for ${keyid}`);

  // 10. Rebuild the base from canonical values and check the signature.
  const uriMalformed = `${profile.prefix}_target_uri_malformed`;
  let target: { targetUri: string; authority: string };
  try {
    target = cachedCanonicalTarget(req.url);
    const host = headers.get('host');
    if (host !== undefined && cachedCanonicalTarget(`${target.targetUri.slice(0, target.targetUri.indexOf(':'))}://${host}/`).authority !== target.authority) {
      fail(uriMalformed, '10', 'Host does not match the signed authority');
    }
  } catch (err) {
    if (err instanceof SignatureVerificationError) throw err;
    if (err instanceof MalformedTargetUriError) return fail(uriMalformed, '10', err.message);
    throw err;
  }
  const value = (c: string): string => {
    switch (c) {
      case '@method':
        return req.method.toUpperCase();
      case '@target-uri':
        return target.targetUri;
      case '@authority':
        return target.authority;
      default: {
        const v = headers.get(c);
        if (v === undefined) fail(code('components_incomplete'), '10', `covered header ${c} is missing`);
        return v!.trim();
      }
    }
  };
  let base = '';
  for (const c of components as string[]) base += `"${c}": ${value(c)}\n`;
  base += `"@signature-params": ${sig1.serialized}`;
  let key: KeyObject;
  try {
    key = publicKeyOf(jwk!);
  } catch {
    return fail(code('key_purpose_invalid'), '8', 'the JWK is not a usable public key');
  }
  const data = Buffer.from(base);
  const ok = alg === 'ed25519' ? verify(null, data, key, signature) : verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature);
  if (!ok) fail(code('invalid'), '10', 'signature does not verify');

  if (options.beforeBodyChecks) await options.beforeBodyChecks();
  // 11. Content-Digest over the exact bytes received, when it is covered.
  if (digestCovered) {
    const digestHeader = value('content-digest');
    let claimed: Buffer | undefined;
    const lone = LONE_SHA256.exec(digestHeader);
    if (lone) claimed = decodeBinary(lone[1]!);
    else {
      try {
        const keys = dictionaryKeys(digestHeader);
        if (keys.filter((k) => k === 'sha-256').length !== 1) throw new Error('one sha-256 member required');
        const m = /(?:^|,)\s*sha-256=:([^:]*):/.exec(digestHeader);
        claimed = m ? decodeBinary(m[1]!) : undefined;
      } catch {
        claimed = undefined;
      }
    }
    if (!claimed) malformed('11', 'Content-Digest needs one sha-256 byte sequence');
    const actual = sha256(body);
    if (claimed!.length !== actual.length || !timingSafeEqual(claimed!, actual)) fail(code('digest_mismatch'), '11', 'Content-Digest does not match the body');
  }

  // 14. A body a last-wins parser would read differently from a strict one.
  let parsedBody: { value: unknown } | undefined;
  if (profile.strictJsonBody) {
    let strict: ReturnType<typeof parseStrictJson>;
    try {
      strict = parseStrictJson(typeof body === 'string' ? body : body.toString('utf8'));
    } catch {
      return fail(`${profile.prefix}_body_malformed`, '14', 'body is not JSON');
    }
    const dup = strict.duplicates;
    if (dup.length > 0) fail(`${profile.prefix}_body_malformed`, '14', `duplicate keys: ${dup.map((k) => JSON.stringify(k.slice(0, 32))).join(', ')}`);
    parsedBody = { value: strict.value };
  }

  const verified: VerifiedSignature = { keyid: keyid!, alg: alg as SignatureAlgorithm, nonce: nonce!, created: created!, expires: expires!, parsedBody };
  if (options.deferNonce) return verified;
  // 12–13. Replay, last: the atomic insert is the check (a nonce already there was seen), and it
  // keeps this one for the rest of its window.
  const fresh = syncReplay ? syncReplay.insertNow(scope, nonce!, expires! + SKEW_SECONDS, now) : await options.replay.insert(scope, nonce!, expires! + SKEW_SECONDS, now);
  if (!fresh) fail(code('replayed'), '12', 'nonce already used');
  return verified;
}

/**
 * Steps 12–13 of a request verified with `deferNonce`, once the caller accepts it: spends its
 * nonce in the same scope, or throws `<prefix>_signature_replayed` when it was already spent
 * (the atomic insert is the check, so two instances racing on one nonce cannot both win).
 */
export async function spendNonce(verified: VerifiedSignature, profile: Pick<SignatureProfile, 'prefix'>, options: Pick<VerifierOptions, 'replay' | 'replayScope' | 'now'>): Promise<void> {
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const scope = options.replayScope === undefined ? verified.keyid : options.replayScope + verified.keyid;
  if (!(await options.replay.insert(scope, verified.nonce, verified.expires + SKEW_SECONDS, now))) {
    fail(`${profile.prefix}_signature_replayed`, '12', 'nonce already used');
  }
}
