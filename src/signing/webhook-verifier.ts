import { createHash, createPublicKey, timingSafeEqual, verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import { parseDictionary, serializeInnerList, type InnerList } from 'structured-headers';
import { LRUCache } from 'lru-cache';
import { canonicalTarget, MalformedTargetUriError, type CanonicalTarget } from './canonical-url';
import { duplicateKeys } from './strict-json';
import { MAX_SIGNATURE_VALIDITY_SECONDS, WEBHOOK_COMPONENTS, WEBHOOK_SIGNING_TAG, type SignatureAlgorithm } from './webhook-signer';

/** The AdCP webhook verification failure codes (security.mdx "webhook_*" taxonomy). */
export type WebhookErrorCode =
  | 'webhook_signature_header_malformed'
  | 'webhook_signature_params_incomplete'
  | 'webhook_signature_tag_invalid'
  | 'webhook_signature_alg_not_allowed'
  | 'webhook_signature_window_invalid'
  | 'webhook_signature_components_incomplete'
  | 'webhook_signature_key_unknown'
  | 'webhook_signature_key_purpose_invalid'
  | 'webhook_signature_key_revoked'
  | 'webhook_signature_revocation_stale'
  | 'webhook_signature_rate_abuse'
  | 'webhook_signature_invalid'
  | 'webhook_signature_digest_mismatch'
  | 'webhook_signature_replayed'
  | 'webhook_target_uri_malformed'
  | 'webhook_body_malformed'
  | 'webhook_mode_mismatch';

export class WebhookVerificationError extends Error {
  constructor(
    readonly code: WebhookErrorCode,
    readonly step: string,
    message?: string,
  ) {
    super(message ?? code);
  }
}

/** Seen (keyid, nonce) pairs for the validity window; shared by every endpoint of a receiver. */
export interface ReplayStore {
  /** How many live nonces this keyid holds (the per-keyid cap, step 9a). */
  count(keyid: string, now: number): Promise<number>;
  has(keyid: string, nonce: string, now: number): Promise<boolean>;
  /** Records the pair until `expiresAt` (unix seconds); false when it was already there. */
  insert(keyid: string, nonce: string, expiresAt: number, now: number): Promise<boolean>;
}

/** A single-process replay store (the CLI, tests). Receivers that run as several instances use the database one. */
export class MemoryReplayStore implements ReplayStore {
  private seen = new Map<string, Map<string, number>>();
  private sweptAt = new Map<string, number>();
  async count(keyid: string, now: number): Promise<number> {
    const m = this.seen.get(keyid);
    if (!m) return 0;
    // Expired entries are dropped at most once a second per keyid, not on every count.
    if ((this.sweptAt.get(keyid) ?? 0) < now) {
      this.sweptAt.set(keyid, now);
      for (const [n, exp] of m) if (exp <= now) m.delete(n);
    }
    return m.size;
  }
  async has(keyid: string, nonce: string, now: number): Promise<boolean> {
    const exp = this.seen.get(keyid)?.get(nonce);
    return exp !== undefined && exp > now;
  }
  async insert(keyid: string, nonce: string, expiresAt: number, now: number): Promise<boolean> {
    if (await this.has(keyid, nonce, now)) return false;
    const m = this.seen.get(keyid) ?? new Map<string, number>();
    m.set(nonce, expiresAt);
    this.seen.set(keyid, m);
    return true;
  }
}

export interface VerifierOptions {
  /** The sender's key by keyid (the JWKS its brand.json names, refetched once on a miss by the caller). */
  resolveKey(keyid: string): Promise<JsonWebKey | undefined>;
  replay: ReplayStore;
  /** Revoked kids and whether the revocation list is past its refresh deadline. */
  revocation?: { revokedKids: ReadonlySet<string>; stale: boolean };
  /** Live nonces one keyid may hold before it is refused (AdCP recommends 100,000 for webhooks). */
  perKeyidCap?: number;
  /** Unix seconds (default: now). */
  now?: number;
}

export interface WebhookRequest {
  method: string;
  /** The URL as received (scheme, host, path and query). */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer | string;
}

export interface VerifiedWebhook {
  keyid: string;
  alg: SignatureAlgorithm;
  nonce: string;
  created: number;
  expires: number;
}

const SKEW_SECONDS = 60;
/** A receiver sees the same few endpoint URLs over and over. */
const canonicalTargets = new LRUCache<string, CanonicalTarget>({ max: 1000 });
/** Imported keys per JWK object (resolvers hand out the same object while it is cached). */
const publicKeys = new WeakMap<object, KeyObject>();
const ALGORITHMS: ReadonlySet<string> = new Set(['ed25519', 'ecdsa-p256-sha256']);
const PURPOSES: ReadonlySet<string> = new Set(['request-signing', 'webhook-signing']);

const fail = (code: WebhookErrorCode, step: string, message?: string): never => {
  throw new WebhookVerificationError(code, step, message);
};

/** Header values by lowercase name (repeated lines joined as HTTP does). */
export function lowerHeaders(h: WebhookRequest['headers']): Map<string, string> {
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

const SF_STRING = '"[\\x20\\x21\\x23-\\x5B\\x5D-\\x7E]*"';
/** An inner list of plain strings with integer / plain-string parameters, exactly as RFC 8941 serializes it. */
const CANONICAL_SIG_INPUT = new RegExp(`^\\(((?:${SF_STRING}(?: ${SF_STRING})*)?)\\)((?:;[a-z*][a-z0-9_.*-]*=(?:-?\\d{1,15}|${SF_STRING}))*)$`);

/**
 * sig1's covered components, parameters and serialized `@signature-params`. The common,
 * canonically serialized form is read directly (its text is its serialization); anything else
 * goes through the full RFC 8941 parser and is re-serialized.
 */
function parseSig1(raw: string): { components: unknown[]; params: Map<string, unknown>; serialized: string } {
  const m = CANONICAL_SIG_INPUT.exec(raw);
  if (m) {
    const components = [...m[1]!.matchAll(/"([^"]*)"/g)].map((x) => x[1]!);
    const params = new Map<string, unknown>();
    for (const p of m[2]!.matchAll(/;([a-z*][a-z0-9_.*-]*)=(-?\d{1,15}|"[^"]*")/g)) {
      if (params.has(p[1]!)) fail('webhook_signature_header_malformed', '1', `parameter ${p[1]} appears twice`);
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
 * webhook-v1 binary values are unpadded base64url, though standard base64 is accepted as
 * published vectors and older SDKs use it; a token mixing the two alphabets is malformed.
 */
function decodeBinary(token: string): Buffer | undefined {
  if (!/^[A-Za-z0-9+/=_-]*$/.test(token)) return undefined;
  if (/[-_]/.test(token) && /[+/]/.test(token)) return undefined;
  if (/=/.test(token) && /[-_]/.test(token)) return undefined;
  return Buffer.from(token, /[-_]/.test(token) ? 'base64url' : 'base64');
}

/** The `sig1` member of the Signature header (sf-binary with a base64url payload), strictly. */
function signatureValue(value: string): Buffer {
  const keys = dictionaryKeys(value);
  if (new Set(keys).size !== keys.length) fail('webhook_signature_header_malformed', '1', 'duplicate Signature label');
  for (const member of value.split(',')) {
    const m = /^\s*([a-z*][a-z0-9_.*-]*)=:([^:]*):\s*$/.exec(member);
    if (!m) fail('webhook_signature_header_malformed', '1', 'Signature is not a dictionary of byte sequences');
    if (m![1] === 'sig1') {
      const bytes = decodeBinary(m![2]!);
      if (!bytes || bytes.length === 0) fail('webhook_signature_header_malformed', '1', 'Signature value is not base64url');
      return bytes!;
    }
  }
  return fail('webhook_signature_header_malformed', '1', 'no sig1 member in Signature');
}

function checkKey(jwk: JsonWebKey & { adcp_use?: string; key_ops?: string[] }, alg: string): void {
  if (jwk.use !== undefined && jwk.use !== 'sig') fail('webhook_signature_key_purpose_invalid', '8', 'JWK use is not sig');
  if (jwk.key_ops !== undefined && !jwk.key_ops.includes('verify')) fail('webhook_signature_key_purpose_invalid', '8', 'JWK key_ops lacks verify');
  if (!PURPOSES.has(jwk.adcp_use ?? '')) fail('webhook_signature_key_purpose_invalid', '8', `adcp_use ${jwk.adcp_use ?? '(absent)'} cannot sign webhooks`);
  const fits = alg === 'ed25519' ? jwk.kty === 'OKP' && jwk.crv === 'Ed25519' && (jwk.alg === undefined || jwk.alg === 'EdDSA') : jwk.kty === 'EC' && jwk.crv === 'P-256' && (jwk.alg === undefined || jwk.alg === 'ES256');
  if (!fits) fail('webhook_signature_key_purpose_invalid', '8', `the key does not fit alg ${alg}`);
}

/**
 * The AdCP webhook verifier checklist (security.mdx, "Verifier checklist for webhooks"), in its
 * order: header parsing (1), parameters (2–5), covered components (6), key resolution and purpose
 * (7–8), revocation and the per-keyid cap before any signature work (9, 9a), the signature over a
 * base rebuilt from canonical components (10), the digest of the received bytes (11), replay
 * (12–13, the nonce recorded only once everything else passed) and duplicate JSON keys (14).
 * Throws WebhookVerificationError with the spec's code.
 */
export async function verifyWebhook(req: WebhookRequest, options: VerifierOptions): Promise<VerifiedWebhook> {
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const body = typeof req.body === 'string' ? Buffer.from(req.body) : req.body;

  // 1. Signature-Input and Signature, both present, strictly parsed; only `sig1` counts.
  const headers = lowerHeaders(req.headers);
  const inputHeader = headers.get('signature-input');
  const sigHeader = headers.get('signature');
  if (!inputHeader || !sigHeader) fail('webhook_signature_header_malformed', '1', 'Signature-Input and Signature must come together');
  const inputMembers = dictionaryMembers(inputHeader!);
  if (new Set(inputMembers.map(([k]) => k)).size !== inputMembers.length) fail('webhook_signature_header_malformed', '1', 'duplicate Signature-Input label');
  let sig1: ReturnType<typeof parseSig1>;
  try {
    // Other labels are ignored, but the header as a whole must still be a valid dictionary.
    if (inputMembers.length > 1) parseDictionary(inputHeader!);
    const raw = inputMembers.find(([k]) => k === 'sig1')?.[1];
    if (raw === undefined) throw new Error('no sig1');
    sig1 = parseSig1(raw);
  } catch (err) {
    if (err instanceof WebhookVerificationError) throw err;
    return fail('webhook_signature_header_malformed', '1', 'Signature-Input is not a valid RFC 8941 dictionary with sig1');
  }
  const signature = signatureValue(sigHeader!);
  const components = sig1.components;
  if (components.some((c) => typeof c !== 'string')) fail('webhook_signature_header_malformed', '1', 'covered components must be strings');
  const params = sig1.params;

  // 2. Every parameter present, with the right types.
  const str = (k: string) => (typeof params.get(k) === 'string' ? (params.get(k) as string) : undefined);
  const int = (k: string) => (Number.isInteger(params.get(k)) ? (params.get(k) as number) : undefined);
  const [created, expires, nonce, keyid, alg, tag] = [int('created'), int('expires'), str('nonce'), str('keyid'), str('alg'), str('tag')];
  if (created === undefined || expires === undefined || !nonce || !keyid || !alg || tag === undefined) {
    fail('webhook_signature_params_incomplete', '2', 'created, expires, nonce, keyid, alg and tag are all required');
  }
  // 3–5. Profile tag, algorithm allowlist, validity window.
  if (tag !== WEBHOOK_SIGNING_TAG) fail('webhook_signature_tag_invalid', '3', `tag must be ${WEBHOOK_SIGNING_TAG}`);
  if (!ALGORITHMS.has(alg!)) fail('webhook_signature_alg_not_allowed', '4', `alg ${alg} is not allowed`);
  if (expires! <= created! || created! > now + SKEW_SECONDS || expires! < now - SKEW_SECONDS || expires! - created! > MAX_SIGNATURE_VALIDITY_SECONDS) {
    fail('webhook_signature_window_invalid', '5', 'signature outside its validity window');
  }
  // 6. The five components the profile fixes.
  for (const c of WEBHOOK_COMPONENTS) if (!components.includes(c)) fail('webhook_signature_components_incomplete', '6', `${c} is not covered`);

  // 7–8. The key, and what it may be used for.
  const jwk = await options.resolveKey(keyid!);
  if (!jwk) fail('webhook_signature_key_unknown', '7', `unknown keyid ${keyid}`);
  checkKey(jwk!, alg!);

  // 9, 9a. Revocation and the per-keyid cap, before spending anything on crypto.
  if (options.revocation?.revokedKids.has(keyid!)) fail('webhook_signature_key_revoked', '9', `key ${keyid} is revoked`);
  if (options.revocation?.stale) fail('webhook_signature_revocation_stale', '9', 'the revocation list is stale');
  if ((await options.replay.count(keyid!, now)) >= (options.perKeyidCap ?? 100_000)) fail('webhook_signature_rate_abuse', '9a', `too many live nonces for ${keyid}`);

  // 10. Rebuild the base from canonical values and check the signature.
  let target: { targetUri: string; authority: string };
  try {
    target = canonicalTargets.get(req.url) ?? canonicalTargets.set(req.url, canonicalTarget(req.url)).get(req.url)!;
    const host = headers.get('host');
    if (host !== undefined && canonicalTarget(`${target.targetUri.split(':')[0]}://${host}/`).authority !== target.authority) {
      fail('webhook_target_uri_malformed', '10', 'Host does not match the signed authority');
    }
  } catch (err) {
    if (err instanceof WebhookVerificationError) throw err;
    if (err instanceof MalformedTargetUriError) return fail('webhook_target_uri_malformed', '10', err.message);
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
        if (v === undefined) fail('webhook_signature_components_incomplete', '10', `covered header ${c} is missing`);
        return v!.trim();
      }
    }
  };
  const base = [...(components as string[]).map((c) => `"${c}": ${value(c)}`), `"@signature-params": ${sig1.serialized}`].join('\n');
  let key = publicKeys.get(jwk!);
  if (!key) {
    try {
      const { kty, crv, x, y } = jwk as { kty: string; crv: string; x: string; y?: string };
      key = createPublicKey({ key: { kty, crv, x, ...(y ? { y } : {}) }, format: 'jwk' });
      publicKeys.set(jwk!, key);
    } catch {
      return fail('webhook_signature_key_purpose_invalid', '8', 'the JWK is not a usable public key');
    }
  }
  const ok = alg === 'ed25519' ? verify(null, Buffer.from(base), key, signature) : verify('sha256', Buffer.from(base), { key, dsaEncoding: 'ieee-p1363' }, signature);
  if (!ok) fail('webhook_signature_invalid', '10', 'signature does not verify');

  // 11. Content-Digest over the exact bytes received.
  const digestHeader = value('content-digest');
  let claimed: Buffer | undefined;
  try {
    const keys = dictionaryKeys(digestHeader);
    if (keys.filter((k) => k === 'sha-256').length !== 1) throw new Error('one sha-256 member required');
    const m = /(?:^|,)\s*sha-256=:([^:]*):/.exec(digestHeader);
    claimed = m ? decodeBinary(m[1]!) : undefined;
  } catch {
    claimed = undefined;
  }
  if (!claimed) fail('webhook_signature_header_malformed', '11', 'Content-Digest needs one sha-256 byte sequence');
  const actual = createHash('sha256').update(body).digest();
  if (claimed!.length !== actual.length || !timingSafeEqual(claimed!, actual)) fail('webhook_signature_digest_mismatch', '11', 'Content-Digest does not match the body');

  // 12–13. Replay: the atomic insert is the check (a nonce already there was seen), and it keeps
  // this one for the rest of its window, before the body is looked at (step 14).
  if (!(await options.replay.insert(keyid!, nonce!, expires! + SKEW_SECONDS, now))) fail('webhook_signature_replayed', '12', 'nonce already used');

  // 14. A body a last-wins parser would read differently from a strict one.
  let dup: string[];
  try {
    dup = duplicateKeys(body.toString('utf8'));
  } catch {
    return fail('webhook_body_malformed', '14', 'body is not JSON');
  }
  if (dup.length > 0) fail('webhook_body_malformed', '14', `duplicate keys: ${dup.map((k) => JSON.stringify(k.slice(0, 32))).join(', ')}`);

  return { keyid: keyid!, alg: alg as SignatureAlgorithm, nonce: nonce!, created: created!, expires: expires! };
}
