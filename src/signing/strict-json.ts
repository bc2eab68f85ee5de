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
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      let escaped = false;
      while (text[j] !== '"') {
        if (text[j] === '\\') {
          escaped = true;
          j += 2;
        } else j++;
      }
      const top = stack[stack.length - 1];
      if (top && expectKey) {
        // "a" and "\u0061" are the same key: unescape when there is anything to unescape.
        const key = escaped ? (JSON.parse(text.slice(i, j + 1)) as string) : text.slice(i + 1, j);
        if (top.has(key)) {
          if (found.length < limit) found.push(key);
        } else top.add(key);
        expectKey = false;
      }
      i = j;
    } else if (c === '{') {
      stack.push(new Set());
      expectKey = true;
    } else if (c === '[') {
      stack.push(null);
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ',') {
      expectKey = stack[stack.length - 1] instanceof Set;
    }
  }
  return found;
}
