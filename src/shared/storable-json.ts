import { jsonNestingDepth, MAX_JSON_DEPTH } from './json-depth';
import { hasUnstorableEscape } from './nul';

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
