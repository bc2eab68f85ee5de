/**
 * How deeply arrays and objects nest in a JSON text (strings skipped), in one pass. A request
 * nested thousands of levels parses fine but overflows the stack of every recursive walk after
 * it (validation, the `context` echo, serialization), so inputs are refused above a depth no
 * AdCP document comes near. Hand-written: the parsers with depth limits are streaming libraries
 * far larger than this scan.
 */
export function jsonNestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // To the quote that ends the string: the next one not escaped (an odd run of backslashes
      // before a quote escapes it). indexOf jumps, so a long string costs a native scan.
      for (;;) {
        const q = text.indexOf('"', i + 1);
        if (q < 0) return max;
        let backslashes = 0;
        while (text.charCodeAt(q - 1 - backslashes) === 0x5c /* \ */) backslashes++;
        i = q;
        if (backslashes % 2 === 0) break;
      }
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) max = depth;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      depth--;
    }
  }
  return max;
}

/** The deepest nesting a request body may have (AdCP documents stay under a dozen levels). */
export const MAX_JSON_DEPTH = 64;
