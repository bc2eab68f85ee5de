import { isObject } from '../../shared/objects';
import { INVALID_PARAMS, INVALID_REQUEST, isJsonRpcId, jsonRpcError, jsonTypeOf, METHOD_NOT_FOUND, type JsonRpcId } from '../json-rpc';

/**
 * A2A 0.3's JSON-RPC methods: those @a2a-js/sdk's transport handler dispatches, and the two
 * streaming ones the route answers itself.
 */
const A2A_METHODS: ReadonlySet<string> = new Set([
  'message/send',
  'message/stream',
  'tasks/get',
  'tasks/cancel',
  'tasks/resubscribe',
  'tasks/pushNotificationConfig/set',
  'tasks/pushNotificationConfig/get',
  'tasks/pushNotificationConfig/list',
  'tasks/pushNotificationConfig/delete',
  'agent/getAuthenticatedExtendedCard',
]);

/** The one method that takes no params. */
const WITHOUT_PARAMS = 'agent/getAuthenticatedExtendedCard';

type RpcError = ReturnType<typeof jsonRpcError>;

/** What a POST to the A2A endpoint is, as JSON-RPC 2.0 reads it before any method runs. */
export type A2aEnvelope =
  /** A request for a known method with object params (or none, where none are taken): the handler's. */
  | { request: Record<string, unknown> & { method: string; params: Record<string, unknown>; id: JsonRpcId | null } }
  /** Refused here with this answer (one error, or an array of them for a batch). */
  | { answer: RpcError | RpcError[] }
  /** A notification (no id), or a batch of only notifications: never answered (JSON-RPC 2.0 §4.1). */
  | { notification: true };

const truncated = (s: string) => (s.length > 100 ? `${s.slice(0, 100)}…` : s);

/** Why a message is not a JSON-RPC 2.0 Request object, if it is not (§4). */
function notARequest(m: unknown): string | undefined {
  if (!isObject(m)) return `a JSON-RPC request is an object, not ${jsonTypeOf(m)}`;
  if (m.jsonrpc !== '2.0') return 'jsonrpc must be "2.0"';
  if (typeof m.method !== 'string') return 'method must be a string';
  // A2A 0.3 §6.11.1 (as JSON-RPC): a string, a number or null; numbers without fractions (@a2a-js/sdk's rule).
  if ('id' in m && m.id !== null && !isJsonRpcId(m.id)) return 'id must be a string, an integer or null';
  // Structured (an object or an array), if present at all.
  if ('params' in m && (typeof m.params !== 'object' || m.params === null)) return `params must be an object, not ${jsonTypeOf(m.params)}`;
  return undefined;
}

/** The id to answer a message with: its own when it has a valid one, else null (§5). */
const idOf = (m: unknown): JsonRpcId | null => (isObject(m) && isJsonRpcId(m.id) ? m.id : null);

/**
 * A POST to the A2A endpoint judged as JSON-RPC 2.0 and A2A 0.3 (§6.11, §7) read it, before
 * @a2a-js/sdk's transport handler sees it (which answers notifications, checks params before the
 * method, and echoes an ill-typed id): not a Request object → -32600 Invalid Request (the id
 * named when it can be told); a method A2A does not have → -32601, whatever its params; params
 * that are not an object → -32602. A notification is never answered; A2A defines none, so it is
 * not run either (as MCP's server drops a `tools/call` without an id). A2A's body is one request
 * (§7): a batch is not served, each of its requests answered -32600 (§6: an array for an array;
 * an empty one, a single error).
 */
export function judgeA2aEnvelope(body: unknown): A2aEnvelope {
  if (Array.isArray(body)) {
    if (body.length === 0) return { answer: jsonRpcError(null, INVALID_REQUEST, 'Invalid Request: an empty batch') };
    const answers = body.flatMap((m) => {
      const fault = notARequest(m);
      if (fault === undefined && !('id' in (m as object))) return [];
      return [jsonRpcError(idOf(m), INVALID_REQUEST, `Invalid Request: ${fault ?? 'this endpoint takes one JSON-RPC request per POST, not a batch'}`)];
    });
    return answers.length > 0 ? { answer: answers } : { notification: true };
  }
  const fault = notARequest(body);
  if (fault !== undefined) return { answer: jsonRpcError(idOf(body), INVALID_REQUEST, `Invalid Request: ${fault}`) };
  const request = body as Record<string, unknown> & { method: string };
  if (!('id' in request)) return { notification: true };
  const id = request.id as JsonRpcId | null;
  if (!A2A_METHODS.has(request.method)) return { answer: jsonRpcError(id, METHOD_NOT_FOUND, `Method not found: ${truncated(request.method)}`) };
  if (request.method === WITHOUT_PARAMS) return { request: { ...request, id, params: {} } };
  if (!isObject(request.params)) return { answer: jsonRpcError(id, INVALID_PARAMS, request.params === undefined ? `Invalid params: ${request.method} takes params` : `Invalid params: params must be an object, not ${jsonTypeOf(request.params)}`) };
  return { request: { ...request, id, params: request.params } };
}
