/**
 * Finds duplicate object keys in a JSON text (AdCP verifier step 14: `JSON.parse` is last-wins,
 * so a body whose signature covers `"status":"approved","status":"rejected"` could mean one
 * thing to the verifier and another to business logic). Returns the duplicated key names, at
 * most `limit`; throws SyntaxError for text that is not JSON. Hand-written because the JSON
 * parsers with duplicate hooks are streaming libraries far larger than this scan.
 */
export function duplicateKeys(text: string, limit = 4): string[] {
  return parseStrictJson(text, limit).duplicates;
}

/** duplicateKeys, with what JSON.parse made of the text (for a caller that would parse it again). */
export function parseStrictJson(text: string, limit = 4): { value: unknown; duplicates: string[] } {
  const value: unknown = JSON.parse(text); // well-formedness (and the error message) from the real parser
  // JSON.parse keeps one property per distinct (unescaped) key, so an object holding fewer
  // properties than its text has members had a duplicate, and one holding as many had none.
  // Summed over every object the counts are equal exactly when no object lost a member; only
  // then is the naming scan below skipped.
  if (memberCount(text) === propertyCount(value)) return { value, duplicates: [] };
  return { value, duplicates: scanDuplicateKeys(text, limit) };
}

/**
 * The members of every object in a valid JSON text: the colons outside strings, in one pass (a
 * string is skipped to its closing quote). Not a search for the next colon from each string,
 * which ran to the end of a text without one: a 1 MB ["a","a",…] took a second. (Nor a colon
 * found once and carried from string to string: V8, having optimized that for small bodies, ran
 * it as slowly on a large one.)
 */
export function memberCount(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) i = closingQuote(text, i);
    else if (c === 0x3a /* : */) count++;
  }
  return count;
}

/**
 * The own properties of every object in a JSON.parse result. Iterative: JSON.parse accepts
 * nesting deeper than the call stack allows, and such a body must not fail here.
 */
export function propertyCount(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  let count = 0;
  const pending: object[] = [value];
  while (pending.length > 0) {
    const v = pending.pop()!;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const x: unknown = v[i];
        if (typeof x === 'object' && x !== null) pending.push(x);
      }
    } else {
      const keys = Object.keys(v);
      count += keys.length;
      for (let i = 0; i < keys.length; i++) {
        const x = (v as Record<string, unknown>)[keys[i]!];
        if (typeof x === 'object' && x !== null) pending.push(x);
      }
    }
  }
  return count;
}

/**
 * Where the string opening at `open` ends, in valid JSON text: the first quote not escaped by an
 * odd run of backslashes (indexOf jumps there instead of stepping through every character).
 */
function closingQuote(text: string, open: number): number {
  let j = text.indexOf('"', open + 1);
  for (;;) {
    let run = 0;
    while (text.charCodeAt(j - 1 - run) === 0x5c) run++;
    if (run % 2 === 0) return j;
    j = text.indexOf('"', j + 1);
  }
}

/**
 * The naming scan of duplicateKeys, over text already known to be valid JSON. Each string is
 * walked once, character by character, noting whether it holds an escape (then, and only then,
 * JSON.parse unescapes it: "a" and "\u0061" are the same key). No search runs ahead of the walk:
 * an earlier version kept `text.indexOf('\\')` in a variable, and V8's optimizing compiler, taking
 * that call as pure, re-ran it inside the loop at each key, so a body with no backslash and one
 * repeated key cost a search to its end per key (80k keys: 4.5 s once optimized, against 60 ms
 * before; issue 45).
 */
export function scanDuplicateKeys(text: string, limit = 4): string[] {
  const found: string[] = [];
  const stack: (Set<string> | null)[] = [];
  let expectKey = false;
  const end = text.length;
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let j = i + 1;
      let escaped = false;
      for (;;) {
        const d = text.charCodeAt(j);
        if (d === 0x22 || j >= end) break;
        if (d === 0x5c /* \ */) {
          escaped = true;
          j += 2;
        } else j++;
      }
      const top = stack[stack.length - 1];
      if (top && expectKey) {
        const key = escaped ? unescapeString(text, i, j) : text.slice(i + 1, j);
        if (top.has(key)) {
          if (found.length < limit) found.push(key);
        } else top.add(key);
        expectKey = false;
      }
      i = j;
    } else if (c === 0x7b /* { */) {
      stack.push(new Set());
      expectKey = true;
    } else if (c === 0x5b /* [ */) {
      stack.push(null);
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
    } else if (c === 0x2c /* , */) {
      expectKey = stack[stack.length - 1] instanceof Set;
    }
  }
  return found;
}

/** The value of the JSON string literal from `open` to `close` (its quotes), escapes resolved. */
function unescapeString(text: string, open: number, close: number): string {
  return JSON.parse(text.slice(open, close + 1)) as string;
}
