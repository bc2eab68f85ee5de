import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { INTERNAL_ERROR, INVALID_PARAMS, jsonTypeOf } from '../json-rpc';

/** One problem a zod schema found (zod 3 and 4 alike), as much of it as a message needs. */
export interface SchemaIssue {
  code: string;
  path: PropertyKey[];
  message: string;
  expected?: unknown;
}

/** Zod's names for what it expected, as a message says them. */
const EXPECTED: Readonly<Record<string, string>> = {
  record: 'an object',
  object: 'an object',
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'a boolean',
  array: 'an array',
};

/** A path into a request as this agent names fields (`params.a[0].b`), cut short if a client made it long. */
function pathText(path: PropertyKey[]): string {
  const text = path.map((k, i) => (typeof k === 'number' ? `[${k}]` : `${i === 0 ? '' : '.'}${String(k)}`)).join('');
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

function valueAt(doc: unknown, path: PropertyKey[]): unknown {
  let node = doc;
  for (const k of path) {
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, k)) return undefined;
    node = (node as Record<PropertyKey, unknown>)[k];
  }
  return node;
}

/**
 * JSON-RPC's "Invalid params" for the first problem MCP's schema found in a request (its path is
 * from the request's root), in a sentence: the member at fault and what it should have been, not
 * the validator's report.
 */
export function invalidParamsMessage(issues: readonly SchemaIssue[], request: unknown): string {
  const issue = issues[0];
  if (!issue) return 'Invalid params';
  const where = pathText(issue.path.length > 0 ? issue.path : ['params']);
  const value = valueAt(request, issue.path);
  if (issue.code === 'invalid_type') {
    if (value === undefined) return `Invalid params: ${where} is required`;
    const expected = typeof issue.expected === 'string' ? (EXPECTED[issue.expected] ?? issue.expected) : 'something else';
    return `Invalid params: ${where} must be ${expected}, not ${jsonTypeOf(value)}`;
  }
  return `Invalid params: ${where}: ${issue.message}`;
}

/** A zod schema's refusal: `ZodError`, or `$ZodError` from zod 4's core (what the SDK's parse throws). */
const isSchemaError = (err: unknown): err is Error & { issues: SchemaIssue[] } => err instanceof Error && /^\$?ZodError$/.test(err.name) && Array.isArray((err as { issues?: unknown }).issues);

/** An error the SDK's Protocol answers as it is: `code` and `message` go into the JSON-RPC error. */
class JsonRpcFault extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

type RequestHandler = (request: unknown, extra: unknown) => Promise<unknown>;

/**
 * The SDK Server parses a request's params against its method's schema before the handler runs
 * (Protocol.setRequestHandler; for `tools/call` before even the Server's own check, which would
 * say -32602), and answers what that parse throws, a ZodError, as -32603 Internal error with the
 * validator's JSON report as its message. JSON-RPC 2.0 assigns that fault -32602 Invalid params.
 * So each of the server's handlers (registered by then) is wrapped: a schema refusal becomes
 * -32602 with a one-sentence message; an error that is neither the SDK's own nor a schema's (a
 * fault of ours) is logged and answered -32603 "Internal error", never in its own words. The SDK
 * keeps its handlers in a private map: a test (mcp-json-exchange) fails if that changes.
 */
export function answerParamsErrorsAsJsonRpc(server: Server, log: { error(obj: object, msg: string): void }): void {
  const handlers = (server as unknown as { _requestHandlers?: unknown })._requestHandlers;
  if (!(handlers instanceof Map)) throw new Error('@modelcontextprotocol/sdk keeps its request handlers elsewhere now: see src/http/mcp/params-errors.ts');
  for (const [method, handle] of handlers as Map<string, RequestHandler>) {
    handlers.set(method, async (request: unknown, extra: unknown) => {
      try {
        return await handle(request, extra);
      } catch (err) {
        if (isSchemaError(err)) throw new JsonRpcFault(INVALID_PARAMS, invalidParamsMessage(err.issues, request));
        if (err instanceof McpError) throw err;
        log.error({ err, method }, 'MCP request handler failed');
        throw new JsonRpcFault(INTERNAL_ERROR, 'Internal error');
      }
    });
  }
}
