/**
 * Whether a JSON text holds U+0000 in a string: JSON writes it only as the escape `\u0000` (a raw
 * NUL is not valid JSON), and an escaped backslash before `u0000` is not one. PostgreSQL's jsonb
 * and text columns cannot store the character, and no AdCP field needs it.
 */
export function hasNulEscape(json: string): boolean {
  return json.includes('\\u0000') && /(?:^|[^\\])(?:\\\\)*\\u0000/.test(json);
}

/**
 * Whether `JSON.stringify` output holds a string PostgreSQL's jsonb refuses: U+0000, or an
 * unpaired surrogate (stringify writes paired ones as characters and only unpaired ones as
 * `\ud800`…`\udfff` escapes).
 */
export function hasUnstorableEscape(stringified: string): boolean {
  return stringified.includes('\\u') && /(?:^|[^\\])(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i.test(stringified);
}

/** Whether a string holds U+0000 or an unpaired surrogate (text PostgreSQL cannot store or compare). */
export function hasUnstorableText(text: string): boolean {
  return text.includes('\0') || /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);
}
