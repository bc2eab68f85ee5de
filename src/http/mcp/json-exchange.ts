import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import { MAX_BATCH_SIZE } from '@modelcontextprotocol/sdk/server/requestBody.js';
import {
  isInitializeRequest,
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type MessageExtraInfo,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';

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

const httpError = (status: number, code: number, message: string): McpHttpAnswer => ({ status, body: { jsonrpc: '2.0', error: { code, message }, id: null } });

/**
 * One stateless Streamable HTTP POST in JSON-response mode, carried between Fastify and the MCP
 * SDK's `Server` without building a Web `Request` and `Response` for it (the SDK's
 * WebStandardStreamableHTTPServerTransport needs both, and they were a fifth of an MCP call's
 * CPU here). The HTTP-level checks are the SDK transport's for this mode, in its order and with
 * its statuses and messages: Accept (406), Content-Type (415), batch size and JSON-RPC shape
 * (400), one initialize per POST, the `mcp-protocol-version` header, 202 for notifications and
 * responses alone. Everything JSON-RPC (initialize, ping, tools/*, method-not-found, invalid
 * params, result validation) stays the SDK Server's. A protocol test sends the same requests to
 * this and to the SDK's own transport and compares the answers.
 *
 * One exchange per transport: connect a fresh Server to it for each POST.
 */
export class JsonExchangeTransport implements Transport {
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  private awaiting: RequestId[] = [];
  private responses = new Map<RequestId, JSONRPCMessage>();
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
    const replies = this.awaiting.map((id) => this.responses.get(id)!);
    this.done({ status: 200, body: replies.length === 1 ? replies[0] : replies });
  }

  /** Checks the POST as the SDK transport does, hands its messages to the server, and answers. */
  async exchange(headers: Headers, body: unknown, url: URL): Promise<McpHttpAnswer> {
    const accept = header(headers, 'accept');
    if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) {
      return httpError(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');
    }
    if (!isJsonContentType(header(headers, 'content-type'))) return httpError(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
    if (Array.isArray(body) && body.length > MAX_BATCH_SIZE) return httpError(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`);
    const parsed = (Array.isArray(body) ? body : [body]).map((m) => JSONRPCMessageSchema.safeParse(m));
    if (parsed.some((p) => !p.success)) return httpError(400, -32700, 'Parse error: Invalid JSON-RPC message');
    const messages = parsed.map((p) => p.data as JSONRPCMessage);
    const initializing = messages.some(isInitialize);
    if (initializing && messages.length > 1) return httpError(400, -32600, 'Invalid Request: Only one initialization request is allowed');
    const version = header(headers, 'mcp-protocol-version');
    if (!initializing && version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
      return httpError(400, -32000, `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`);
    }
    const extra: MessageExtraInfo = { requestInfo: { headers: headers as Record<string, string | string[] | undefined>, url } };
    if (!messages.some(isRequest)) {
      for (const m of messages) this.onmessage?.(m, extra);
      return { status: 202 };
    }
    const answer = new Promise<McpHttpAnswer>((resolve) => (this.done = resolve));
    // Keyed by id as the SDK's transport keys them: a batch repeating an id is answered once.
    for (const m of messages) if (isRequest(m) && !this.awaiting.includes(m.id)) this.awaiting.push(m.id);
    for (const m of messages) this.onmessage?.(m, extra);
    return answer;
  }
}
