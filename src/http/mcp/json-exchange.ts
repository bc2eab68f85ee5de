import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import { MAX_BATCH_SIZE } from '@modelcontextprotocol/sdk/server/requestBody.js';
import {
  isInitializeRequest,
  JSONRPCMessageSchema,
  JSONRPCRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type MessageExtraInfo,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { isObject } from '../../shared/objects';
import { INVALID_PARAMS, INVALID_REQUEST, isJsonRpcId, jsonRpcError, jsonTypeOf } from '../json-rpc';
import { invalidParamsMessage, type SchemaIssue } from './params-errors';

/** What one POST to the MCP endpoint answers: a status and, unless 202, a JSON-RPC body. */
export interface McpHttpAnswer {
  status: number;
  body?: unknown;
}

type Headers = Readonly<Record<string, string | string[] | undefined>>;

const header = (headers: Headers, name: string): string | undefined => {
  const v = headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
};

/*
 * Once a message has passed JSONRPCMessageSchema (whose four arms are strict objects), its keys
 * say which arm it is: the SDK's zod type guards would parse the whole message again, several
 * times per call, to learn the same.
 */
const isRequest = (m: JSONRPCMessage): m is JSONRPCRequest => 'method' in m && 'id' in m;
const isResponse = (m: JSONRPCMessage): boolean => 'result' in m || 'error' in m;
const isInitialize = (m: JSONRPCMessage): boolean => 'method' in m && m.method === 'initialize' && isInitializeRequest(m);

const httpError = (status: number, code: number, message: string): McpHttpAnswer => ({ status, body: jsonRpcError(null, code, message) });

/** The members JSON-RPC 2.0 gives a Request object (§4): any other makes it an invalid one. */
const REQUEST_MEMBERS: ReadonlySet<string> = new Set(['jsonrpc', 'id', 'method', 'params']);

/** Why a message is not a JSON-RPC 2.0 Request (or Response) object at all, if it is not. */
function notJsonRpc(m: unknown): string | undefined {
  if (!isObject(m)) return `a JSON-RPC message is an object, not ${jsonTypeOf(m)}`;
  if (m.jsonrpc !== '2.0') return 'jsonrpc must be "2.0"';
  // A response (the client answering a request of ours): the SDK's schema judges it whole.
  if (!('method' in m) && ('result' in m || 'error' in m)) return undefined;
  if (typeof m.method !== 'string') return 'method must be a string';
  // MCP: "Unlike base JSON-RPC, the ID MUST NOT be null".
  if ('id' in m && !isJsonRpcId(m.id)) return 'id must be a string or an integer';
  // JSON-RPC: params, if present, is a structured value (an object, or an array MCP then refuses).
  if ('params' in m && (typeof m.params !== 'object' || m.params === null)) return `params must be an object, not ${jsonTypeOf(m.params)}`;
  if (Object.keys(m).some((k) => !REQUEST_MEMBERS.has(k))) return 'a request has no members but jsonrpc, id, method and params';
  return undefined;
}

/** One message of a POST, judged before the server sees it. */
type Judged =
  /** JSON-RPC that MCP's schema takes: the server's. */
  | { message: JSONRPCMessage }
  /** Answered here: `invalid` when it is not JSON-RPC at all (-32600), else JSON-RPC whose params MCP refuses (-32602). */
  | { answer: ReturnType<typeof jsonRpcError>; invalid: boolean }
  /** A notification MCP's schema refuses: never answered (JSON-RPC 2.0 §4.1), so dropped. */
  | { dropped: true };

/**
 * A request JSONRPCRequestSchema takes, told without zod: an object of those four members only,
 * `jsonrpc: "2.0"`, a string or safe-integer id, a string method, and params absent or an object
 * without `_meta` (the one member of params the schema looks into; with it, the schema judges).
 * Nearly every POST is one such request, and the schema's parse copies it to answer the same.
 */
export function isPlainRequest(m: unknown): m is JSONRPCRequest {
  if (!isObject(m) || m.jsonrpc !== '2.0' || typeof m.method !== 'string' || !isJsonRpcId(m.id)) return false;
  for (const k in m) if (!REQUEST_MEMBERS.has(k)) return false;
  return m.params === undefined ? !('params' in m) : isObject(m.params) && !Object.hasOwn(m.params, '_meta');
}

function judge(m: unknown): Judged {
  if (isPlainRequest(m)) return { message: m };
  const parsed = JSONRPCMessageSchema.safeParse(m);
  if (parsed.success) return { message: parsed.data as JSONRPCMessage };
  const id = isObject(m) && isJsonRpcId(m.id) ? m.id : null;
  const fault = notJsonRpc(m);
  if (fault !== undefined) return { answer: jsonRpcError(id, INVALID_REQUEST, `Invalid Request: ${fault}`), invalid: true };
  if (!('method' in (m as object))) return { answer: jsonRpcError(id, INVALID_REQUEST, 'Invalid Request: a response must carry an id and exactly one of result or error'), invalid: true };
  if (id === null) return { dropped: true };
  // A valid JSON-RPC request: what MCP's schema refuses is in its params.
  const issues = JSONRPCRequestSchema.safeParse(m).error?.issues ?? [];
  return { answer: jsonRpcError(id, INVALID_PARAMS, invalidParamsMessage(issues as SchemaIssue[], m)), invalid: false };
}

/** What a POST's answer holds, in the order of its messages: the server's reply to a request (by id), or an answer made here. */
type Slot = { id: RequestId } | { answer: unknown };

/**
 * One stateless Streamable HTTP POST in JSON-response mode, carried between Fastify and the MCP
 * SDK's `Server` without building a Web `Request` and `Response` for it (the SDK's
 * WebStandardStreamableHTTPServerTransport needs both, and they were a fifth of an MCP call's
 * CPU here). The HTTP-level checks are the SDK transport's for this mode, in its order and with
 * its statuses and messages: Accept (406), Content-Type (415), batch size (400), one initialize per
 * POST, the `mcp-protocol-version` header, 202 for notifications and responses alone. Everything
 * JSON-RPC (initialize, ping, tools/*, method-not-found, invalid params) stays the SDK Server's
 * (the route registers tools/call without the Server's re-check of its own results: route.ts). A protocol test sends the same requests to this and to the SDK's own transport
 * and compares the answers.
 *
 * Where the SDK's transport departs from JSON-RPC 2.0, this follows JSON-RPC (and the protocol test
 * says so, case by case): a message that is not a Request object is -32600 Invalid Request, not
 * -32700 (which is for text that is not JSON), naming its id when it has a valid one; a request
 * whose params MCP's schema refuses is -32602; an empty batch is one -32600 (§6), not a 202; in a
 * batch each invalid message gets its own error beside the others' answers (§6), instead of the
 * whole POST being refused. A POST with nothing the server could take stays a 400.
 *
 * One exchange per transport: connect a fresh Server to it for each POST.
 */
export class JsonExchangeTransport implements Transport {
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  private awaiting: RequestId[] = [];
  private responses = new Map<RequestId, JSONRPCMessage>();
  private slots: Slot[] = [];
  private batch = false;
  private done?: (answer: McpHttpAnswer) => void;

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.onclose?.();
  }

  /**
   * The SDK server's replies. Responses are kept until every request of the POST has one; with no
   * stream to write to, a notification or server-to-client request is dropped, as the SDK's
   * transport drops them in JSON-response mode.
   */
  async send(message: JSONRPCMessage): Promise<void> {
    if (!isResponse(message)) return;
    const id = (message as { id?: RequestId }).id;
    if (id === undefined || !this.awaiting.includes(id)) throw new Error(`No connection established for request ID: ${String(id)}`);
    this.responses.set(id, message);
    if (!this.done || !this.awaiting.every((id) => this.responses.has(id))) return;
    const replies = this.slots.map((s) => ('id' in s ? this.responses.get(s.id)! : s.answer));
    this.done({ status: 200, body: this.batch ? replies : replies[0] });
  }

  /** Checks the POST as the SDK transport does, hands its messages to the server, and answers. */
  async exchange(headers: Headers, body: unknown, url: URL | (() => URL)): Promise<McpHttpAnswer> {
    const accept = header(headers, 'accept');
    if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) {
      return httpError(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');
    }
    if (!isJsonContentType(header(headers, 'content-type'))) return httpError(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
    if (Array.isArray(body) && body.length > MAX_BATCH_SIZE) return httpError(400, INVALID_REQUEST, `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`);
    if (Array.isArray(body) && body.length === 0) return httpError(400, INVALID_REQUEST, 'Invalid Request: an empty batch (a batch holds at least one message)');
    this.batch = Array.isArray(body);
    const judged = (this.batch ? (body as unknown[]) : [body]).map(judge);
    const messages = judged.flatMap((j) => ('message' in j ? [j.message] : []));
    const answered = judged.flatMap((j) => ('answer' in j ? [j] : []));
    const initializing = messages.some(isInitialize);
    if (initializing && messages.length > 1) return httpError(400, INVALID_REQUEST, 'Invalid Request: Only one initialization request is allowed');
    const version = header(headers, 'mcp-protocol-version');
    if (!initializing && version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      return httpError(400, -32000, `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`);
    }
    const requestHeaders = headers as Record<string, string | string[] | undefined>;
    let made: URL | undefined;
    const extra: MessageExtraInfo = {
      requestInfo:
        typeof url === 'function'
          ? {
              headers: requestHeaders,
              get url() {
                return (made ??= url());
              },
            }
          : { headers: requestHeaders, url },
    };
    // Keyed by id as the SDK's transport keys them: a batch repeating an id is answered once.
    for (const j of judged) {
      if ('answer' in j) this.slots.push({ answer: j.answer });
      else if ('message' in j && isRequest(j.message) && !this.awaiting.includes(j.message.id)) {
        this.awaiting.push(j.message.id);
        this.slots.push({ id: j.message.id });
      }
    }
    if (this.awaiting.length === 0) {
      for (const m of messages) this.onmessage?.(m, extra);
      if (answered.length === 0) return { status: 202 };
      const answers = answered.map((a) => a.answer);
      // Nothing here was JSON-RPC the server could take: a bad request, as the SDK's transport says.
      const status = messages.length === 0 && answered.every((a) => a.invalid) && !judged.some((j) => 'dropped' in j) ? 400 : 200;
      return { status, body: this.batch ? answers : answers[0] };
    }
    const answer = new Promise<McpHttpAnswer>((resolve) => (this.done = resolve));
    for (const m of messages) this.onmessage?.(m, extra);
    return answer;
  }
}
