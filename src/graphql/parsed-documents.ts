import { parse, type DocumentNode } from 'graphql';

/**
 * GraphQL documents parsed once per text, for pricing an operation before Apollo runs it (Apollo
 * keeps its own parsed documents, by hash, for execution). A client repeats a handful of
 * documents, so nearly every request is a map lookup. Bounded by the characters held: when a new
 * document would pass `maxChars`, the oldest go first. Documents over the cost limits' token
 * bound are refused before they get here, so one entry is never large.
 */
export class ParsedDocuments {
  /** Insertion order is age order: the first key is the oldest. Null: the text does not parse. */
  private readonly byText = new Map<string, DocumentNode | null>();
  private chars = 0;

  constructor(private readonly maxChars = 2_000_000) {}

  /** The document, or null when the text is not GraphQL (Apollo then reports the syntax error). */
  get(text: string): DocumentNode | null {
    const known = this.byText.get(text);
    if (known !== undefined) return known;
    let document: DocumentNode | null;
    try {
      document = parse(text);
    } catch {
      document = null; // a syntax error, or a document nested past the parser's stack
    }
    this.chars += text.length;
    for (const [oldest] of this.byText) {
      if (this.chars <= this.maxChars) break;
      this.byText.delete(oldest);
      this.chars -= oldest.length;
    }
    this.byText.set(text, document);
    return document;
  }
}
