/**
 * Finds duplicate object keys in a JSON text (AdCP verifier step 14: `JSON.parse` is last-wins,
 * so a body whose signature covers `"status":"approved","status":"rejected"` could mean one
 * thing to the verifier and another to business logic). Returns the duplicated key names, at
 * most `limit`; throws SyntaxError for text that is not JSON. Hand-written because the JSON
 * parsers with duplicate hooks are streaming libraries far larger than this scan.
 */
export function duplicateKeys(text: string, limit = 4): string[] {
  JSON.parse(text); // well-formedness (and the error message) from the real parser
  const found: string[] = [];
  const stack: (Set<string> | null)[] = [];
  let expectKey = false;
  // The next backslash at or after the current string, found once per backslash instead of
  // searched from every key to the end of the text.
  let backslash = text.indexOf('\\');
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // The text is valid JSON, so the string ends at the first quote not escaped by an odd run
      // of backslashes; indexOf jumps there instead of stepping through every character.
      let j = text.indexOf('"', i + 1);
      for (;;) {
        let run = 0;
        while (text.charCodeAt(j - 1 - run) === 0x5c) run++;
        if (run % 2 === 0) break;
        j = text.indexOf('"', j + 1);
      }
      const top = stack[stack.length - 1];
      if (top && expectKey) {
        // "a" and "\u0061" are the same key: unescape when there is anything to unescape.
        while (backslash !== -1 && backslash < i) backslash = text.indexOf('\\', backslash + 1);
        const key = backslash !== -1 && backslash < j ? (JSON.parse(text.slice(i, j + 1)) as string) : text.slice(i + 1, j);
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
