import { isUtf8 } from 'node:buffer';
import { jsonNestingDepth, MAX_JSON_DEPTH } from './json-depth';
import { hasUnstorableEscape } from './nul';
import { parseStrictJson } from '../signing/strict-json';

/** JSON that parses but holds what the gateway refuses to keep or walk. */
export class UnstorableJsonError extends SyntaxError {}

/**
 * A counterparty's JSON text (a fetched brand.json, adagents.json or JWKS, a received webhook),
 * parsed; refused with UnstorableJsonError when it nests deeper than MAX_JSON_DEPTH or holds
 * U+0000 or an unpaired surrogate: the log cannot store either (PostgreSQL would refuse it, or
 * silently replace it), and no AdCP document needs them. Invalid JSON throws SyntaxError.
 */
export function parseStorableJson(text: string, parsed?: { value: unknown }): unknown {
  if (jsonNestingDepth(text) > MAX_JSON_DEPTH) throw new UnstorableJsonError(`nests deeper than ${MAX_JSON_DEPTH} levels`);
  // `parsed`: what JSON.parse(text) already answered (the webhook verifier's strict-JSON step),
  // not parsed a second time.
  const doc = parsed ? parsed.value : (JSON.parse(text) as unknown);
  if (hasUnstorableEscape(JSON.stringify(doc))) throw new UnstorableJsonError('contains U+0000 (NUL) or an unpaired surrogate');
  return doc;
}

/**
 * A counterparty's bytes as text, refused (UnstorableJsonError "is not valid UTF-8") when they are
 * not UTF-8: `Buffer.toString('utf8')` would read them as U+FFFD, so what is stored would not be
 * what was sent (and signed). Fetched documents and received webhooks both go through it.
 */
export function decodeUtf8(bytes: Uint8Array): string {
  // isUtf8 checks natively (a fraction of the decode's cost, where a fatal TextDecoder doubles
  // it); a BOM is kept (JSON.parse refuses it), as are the bytes.
  if (!isUtf8(bytes)) throw new UnstorableJsonError('is not valid UTF-8');
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/**
 * A counterparty's JSON document as fetched (adagents.json, brand.json, a JWKS), held to what the
 * webhook receiver demands of a body: UTF-8 bytes (not silently repaired), no object naming a key
 * twice (a last-wins parser and a strict one would read it differently: AdCP verifier step 14),
 * and storable (parseStorableJson). Refusals are UnstorableJsonError saying what is wrong ("is not
 * valid UTF-8"); text that is not JSON throws SyntaxError.
 */
export function parseFetchedJson(bytes: Uint8Array): unknown {
  const text = decodeUtf8(bytes);
  // One JSON.parse for both checks (the duplicate-key scan answers what it parsed).
  const { value, duplicates } = parseStrictJson(text, 1);
  const doc = parseStorableJson(text, { value });
  const [repeated] = duplicates;
  if (repeated !== undefined) throw new UnstorableJsonError(`has the key ${JSON.stringify(repeated.slice(0, 64))} more than once in one object`);
  return doc;
}
