import { serializeInnerList } from 'structured-headers';

/** What RFC 8941 serializes as `"<value>"` with nothing escaped: printable ASCII but `"` and `\`. */
const PLAIN_SF_STRING = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const SF_KEY = /^[a-z*][a-z0-9_\-.*]*$/;
const MAX_SF_INTEGER = 999_999_999_999_999;

/**
 * The `@signature-params` value: the covered component ids as an RFC 8941 inner list with the
 * parameters in the order given (verifiers rebuild the base from the received order).
 *
 * Written out directly when every member is one whose serialization is its own text (plain
 * strings, in-range integers, valid keys, no key twice), which is every signature this agent
 * makes: the structured-headers serializer's per-member maps and regexes were a tenth of signing.
 * Anything else (an escape, a decimal, a bad key) takes the library, which escapes or throws.
 */
export function signatureParams(components: readonly string[], params: ReadonlyArray<readonly [string, string | number]>): string {
  let out = '(';
  for (let i = 0; i < components.length; i++) {
    const c = components[i]!;
    if (!PLAIN_SF_STRING.test(c)) return librarySignatureParams(components, params);
    out += i === 0 ? `"${c}"` : ` "${c}"`;
  }
  out += ')';
  const seen = new Set<string>();
  for (const [k, v] of params) {
    if (seen.has(k) || !SF_KEY.test(k)) return librarySignatureParams(components, params);
    seen.add(k);
    if (typeof v === 'string' && PLAIN_SF_STRING.test(v)) out += `;${k}="${v}"`;
    else if (typeof v === 'number' && Number.isInteger(v) && Math.abs(v) <= MAX_SF_INTEGER) out += `;${k}=${v}`;
    else return librarySignatureParams(components, params);
  }
  return out;
}

function librarySignatureParams(components: readonly string[], params: ReadonlyArray<readonly [string, string | number]>): string {
  return serializeInnerList([components.map((c) => [c, new Map()]), new Map(params)]);
}

/**
 * RFC 9421 §2.5 signature base: one `"<component>": <value>` line per covered component in
 * order, then `"@signature-params"`, joined by LF with no trailing newline.
 */
export function signatureBase(components: ReadonlyArray<readonly [string, string]>, params: string): string {
  let base = '';
  for (const [id, value] of components) base += `"${id}": ${value}\n`;
  return `${base}"@signature-params": ${params}`;
}
