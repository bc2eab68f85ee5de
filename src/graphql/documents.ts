import { hash } from 'node:crypto';
import type { FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify';
import { LRUCache } from 'lru-cache';
import { BREAK, GraphQLError, OverlappingFieldsCanBeMergedRule, parse, Source, specifiedRules, validate, visit, type DocumentNode, type GraphQLSchema, type ValidationRule } from 'graphql';
import { MAX_JSON_DEPTH } from '../shared/json-depth';
import { FieldsCanMergeRule } from './fields-can-merge';
import { nestingLimitRule } from './nesting-limit';

/**
 * The validation every GraphQL document gets, on every transport: the spec's rules, with
 * graphql-js's field-merging rule (quadratic and worse in repeated fields) replaced by a linear
 * one, and the nesting limit the other bindings have.
 */
export const VALIDATION_RULES: readonly ValidationRule[] = [...specifiedRules.filter((rule) => rule !== OverlappingFieldsCanBeMergedRule), FieldsCanMergeRule, nestingLimitRule];

/**
 * A document ready to run, or why it cannot run (with the code Apollo gives each failure). The
 * reasons are kept as text and positions in the source, not as the errors validation raised: an
 * error's stack trace, until it is read, holds its call sites, and through them the whole
 * validation context (the AST, the visitors, the type info): ~40 KB per cached refusal here.
 */
export type PreparedDocument =
  | { readonly valid: true; readonly document: DocumentNode }
  | { readonly valid: false; readonly code: 'GRAPHQL_PARSE_FAILED' | 'GRAPHQL_VALIDATION_FAILED' | 'BAD_REQUEST'; readonly source: Source; readonly errors: readonly Reason[] };

/** Why a document cannot run: a message, and where in the source (character offsets). */
interface Reason {
  readonly message: string;
  readonly positions?: readonly number[];
}

/**
 * A parsed document holds ~90 bytes per character of its text (its AST with locations and the
 * lexer's tokens they point to, measured with graphql 16 here): what the cache counts an entry as.
 */
const BYTES_PER_CHAR = 90;

/**
 * GraphQL documents parsed and validated once per text, shared by every transport (POST and GET
 * /graphql, graphql-ws, graphql-sse), by the pricing step and by Apollo, which is handed
 * `apolloDocumentStore()` and so neither parses nor validates a document again. Work on a text is
 * linear in its length whatever its fragments do (the linear merging rule; pricing memoises
 * fragments), and the cache is bounded by the memory its entries hold, not by their count, so a
 * client sending a new document every request (ids written into the query text) cycles entries
 * rather than growing the heap.
 */
export class GraphqlDocuments {
  private readonly byText: LRUCache<string, PreparedDocument>;
  /** Valid documents by the SHA-256 of their text, as Apollo looks them up. */
  private readonly byHash = new Map<string, DocumentNode>();

  constructor(
    private readonly schema: GraphQLSchema,
    maxBytes = 32 * 1024 * 1024,
  ) {
    this.byText = new LRUCache<string, PreparedDocument>({
      maxSize: maxBytes,
      sizeCalculation: (_prepared, text) => Math.max(1, text.length * BYTES_PER_CHAR),
      dispose: (prepared, text) => {
        if (prepared.valid) this.byHash.delete(queryHash(text));
      },
    });
  }

  /** What the cache holds now: entries, and the bytes it counts them as (for /metrics). */
  held(): { entries: number; bytes: number } {
    return { entries: this.byText.size, bytes: this.byText.calculatedSize };
  }

  /** The document for this text, parsed and validated (from the cache when the text was seen). */
  prepare(text: string): PreparedDocument {
    const known = this.byText.get(text);
    if (known) return known;
    const prepared = this.parseAndValidate(text);
    // Larger than the whole cache: answered, not kept.
    if (text.length * BYTES_PER_CHAR <= this.byText.maxSize) {
      this.byText.set(text, prepared);
      if (prepared.valid) this.byHash.set(queryHash(text), prepared.document);
    }
    return prepared;
  }

  private parseAndValidate(text: string): PreparedDocument {
    const source = new Source(text);
    let document: DocumentNode;
    try {
      document = parse(source);
    } catch (err) {
      // graphql-js parses recursively: a document nested some thousand levels overflows the stack.
      const reason = err instanceof GraphQLError ? reasonOf(err) : { message: `the document nests too deeply to parse (the limit is ${MAX_JSON_DEPTH} levels)` };
      return { valid: false, code: 'GRAPHQL_PARSE_FAILED', source, errors: [reason] };
    }
    // The JSON parser cannot see a NUL written as an escape inside the document (`\u0000`,
    // `\u{0}`); nothing may carry one into the log or a query.
    if (text.includes('\\u') && hasNulString(document)) {
      return { valid: false, code: 'BAD_REQUEST', source, errors: [{ message: 'the GraphQL request contains U+0000 (NUL), which no field accepts' }] };
    }
    let errors: readonly GraphQLError[];
    try {
      errors = validate(this.schema, document, VALIDATION_RULES);
    } catch (err) {
      // graphql-js's SingleFieldSubscriptionsRule collects fields with no variables and throws when
      // a directive names one (`subscription { ... @include(if: $v) { a } }`): a refusal, not a 500.
      errors = [err instanceof GraphQLError ? err : new GraphQLError('the document could not be validated')];
    }
    return errors.length ? { valid: false, code: 'GRAPHQL_VALIDATION_FAILED', source, errors: errors.map(reasonOf) } : { valid: true, document };
  }

  /**
   * Apollo's `documentStore`: the valid documents prepared here, by the key Apollo computes
   * (its schema-hash prefix, then the SHA-256 of the text). Apollo stores what it validated
   * itself on a miss; nothing reaches it unprepared (the /graphql route prepares every document
   * first), so its writes are not kept.
   */
  apolloDocumentStore(): { get(key: string): Promise<DocumentNode | undefined>; set(): Promise<void>; delete(): Promise<void> } {
    return {
      get: async (key) => this.byHash.get(key.slice(key.lastIndexOf(':') + 1)),
      set: async () => {},
      delete: async () => {},
    };
  }
}

/** Whether a string value of the document holds U+0000 (only an escape can put one there). */
function hasNulString(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    StringValue(node) {
      if (!node.value.includes('\0')) return undefined;
      found = true;
      return BREAK;
    },
  });
  return found;
}

/** What Apollo keys a document by (its computeQueryHash): SHA-256 of the text, hex. */
function queryHash(text: string): string {
  return hash('sha256', text, 'hex');
}

/** Only what an error says and where: nothing that holds the document or the validation context. */
function reasonOf(error: GraphQLError): Reason {
  const positions = error.positions ?? error.nodes?.flatMap((n) => (n.loc ? [n.loc.start] : []));
  return positions?.length ? { message: error.message, positions: [...positions] } : { message: error.message };
}

/** A document that cannot run, as GraphQL errors in Apollo's shape (its code in extensions, its locations in the source). */
export function preparedErrors(prepared: Extract<PreparedDocument, { valid: false }>): GraphQLError[] {
  return prepared.errors.map((e) => new GraphQLError(e.message, { source: e.positions ? prepared.source : undefined, positions: e.positions, extensions: { code: prepared.code } }));
}

/** What a GraphQL request names: its document, operation and variables. */
export interface OperationParams {
  query?: unknown;
  operationName?: unknown;
  variables?: unknown;
}

/** Answers a request whose document does not parse or validate (400, the errors in Apollo's shape). */
export type InvalidDocumentAnswer = (req: FastifyRequest, reply: FastifyReply, prepared: Extract<PreparedDocument, { valid: false }>) => Promise<void>;

/**
 * A /graphql request's document, operation and variables, read as Apollo reads them: a GET
 * request's from its query string by URLSearchParams (the first of repeated names), so the text
 * prepared here is the text Apollo looks up; a POST request's from its JSON body.
 */
export function operationParamsOf(req: FastifyRequest): OperationParams | undefined {
  if (req.method !== 'GET') return req.body as OperationParams | undefined;
  const q = req.url.indexOf('?');
  if (q === -1) return undefined;
  const search = new URLSearchParams(req.url.slice(q + 1));
  return { query: search.get('query') ?? undefined, operationName: search.get('operationName') ?? undefined, variables: search.get('variables') ?? undefined };
}

/**
 * The /graphql route's preHandler when the resource limits are off (with them on, the pricing
 * step does this first): every document is prepared here before Apollo sees it, and one that does
 * not parse or validate is answered here, so Apollo only ever runs prepared documents.
 */
export function prepareOperations(documents: GraphqlDocuments, refuseInvalid: InvalidDocumentAnswer): preHandlerHookHandler {
  return (req, reply, done) => {
    const query = operationParamsOf(req)?.query;
    if (typeof query !== 'string') return done();
    const prepared = documents.prepare(query);
    if (prepared.valid) return done();
    refuseInvalid(req, reply, prepared).catch((err: unknown) => done(err as Error));
  };
}
