import { serializeInnerList } from 'structured-headers';

/**
 * The `@signature-params` value: the covered component ids as an RFC 8941 inner list with the
 * parameters in the order given (verifiers rebuild the base from the received order).
 */
export function signatureParams(components: readonly string[], params: ReadonlyArray<readonly [string, string | number]>): string {
  return serializeInnerList([components.map((c) => [c, new Map()]), new Map(params)]);
}

/**
 * RFC 9421 §2.5 signature base: one `"<component>": <value>` line per covered component in
 * order, then `"@signature-params"`, joined by LF with no trailing newline.
 */
export function signatureBase(components: ReadonlyArray<readonly [string, string]>, params: string): string {
  return [...components.map(([id, value]) => `"${id}": ${value}`), `"@signature-params": ${params}`].join('\n');
}
