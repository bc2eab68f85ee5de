import type { IncomingMessage } from 'node:http';
import { isObject } from '../shared/objects';

/**
 * JSON-RPC 2.0 as MCP and A2A carry it, the parts both bindings share: the standard error codes,
 * AdCP's reserved transport codes, and the id an answer must carry.
 */

/** A request id an answer can name: a string or an integer (MCP and @a2a-js/sdk both refuse fractions). */
export type JsonRpcId = string | number;

/** JSON-RPC 2.0 §5.1's codes. */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
/** The start of the range JSON-RPC leaves to servers (-32000 to -32099), for a refusal no other code names. */
export const SERVER_ERROR = -32000;

/**
 * AdCP's reserved codes for a request refused before any tool or task ran (transport-errors.mdx,
 * "Reserved JSON-RPC Codes"), each with AdCP's error under `error.data.adcp_error`.
 */
export const ADCP_TRANSPORT_CODES = { RATE_LIMITED: -32029, AUTH_REQUIRED: -32028, SERVICE_UNAVAILABLE: -32027 } as const;

/** The reserved code for an AdCP error code, if it has one. */
export const adcpTransportCodeOf = (adcpCode: string): number | undefined => (ADCP_TRANSPORT_CODES as Readonly<Record<string, number>>)[adcpCode];

export const isJsonRpcId = (v: unknown): v is JsonRpcId => typeof v === 'string' || (typeof v === 'number' && Number.isSafeInteger(v));

/**
 * The id of the one JSON-RPC request a body holds, when an answer can name it; undefined for a
 * notification, a batch, a null or ill-typed id, or a body that is not a request at all.
 */
export function jsonRpcIdOf(body: unknown): JsonRpcId | undefined {
  return isObject(body) && isJsonRpcId(body.id) ? body.id : undefined;
}

/** A JSON-RPC error response; `id` null when the request's could not be told (JSON-RPC 2.0 §5). */
export function jsonRpcError(id: JsonRpcId | null | undefined, code: number, message: string, data?: unknown): { jsonrpc: '2.0'; id: JsonRpcId | null; error: { code: number; message: string; data?: unknown } } {
  return { jsonrpc: '2.0', id: id ?? null, error: { code, message, ...(data === undefined ? {} : { data }) } };
}

/** How a JSON value is named in an error message ("a string", "an array", "null"). */
export function jsonTypeOf(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? `a ${typeof v}` : typeof v;
}

/**
 * The largest body read to learn the id of a request refused before Fastify read it (a limit
 * answers in `onRequest`): a JSON-RPC call is small, and a refusal must stay cheaper than the work
 * it refuses. A larger body is answered with `id: null`.
 */
export const ID_SCAN_LIMIT_BYTES = 64 * 1024;

/**
 * The JSON-RPC id in a request body nobody has read yet, read here (up to ID_SCAN_LIMIT_BYTES, and
 * only a JSON body that says how long it is); undefined when it cannot be told.
 */
export async function jsonRpcIdOfUnreadBody(raw: IncomingMessage): Promise<JsonRpcId | undefined> {
  const length = Number(raw.headers['content-length']);
  if (!(length > 0 && length <= ID_SCAN_LIMIT_BYTES) || raw.readableDidRead || raw.readableEnded) return undefined;
  if (!/^application\/([\w.+-]+\+)?json\b/i.test(String(raw.headers['content-type'] ?? ''))) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of raw) {
      size += (chunk as Buffer).length;
      if (size > ID_SCAN_LIMIT_BYTES) return undefined;
      chunks.push(chunk as Buffer);
    }
    return jsonRpcIdOf(JSON.parse(Buffer.concat(chunks).toString('utf8')));
  } catch {
    return undefined;
  }
}
