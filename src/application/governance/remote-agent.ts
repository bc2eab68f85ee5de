import http from 'node:http';
import https from 'node:https';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import type { GovernanceAgent } from '../../domain/account/account';
import { REQUEST_SIGNING_TAG } from '../../signing/request-verifier';
import { signWebhook } from '../../signing/webhook-signer';
import { AppError } from '../../shared/errors';
import { isObject } from '../../shared/objects';
import type { TaskPorts } from '../ports';

/** What a call to a remote governance agent uses: the request signer and the private-address seam. */
type RemoteAgentPorts = Pick<TaskPorts, 'signer' | 'settings'>;

/** A governance agent answers within this, or the buy waits for nothing: GOVERNANCE_UNAVAILABLE. */
const TIMEOUT_MS = 10_000;
/** An answer larger than this is not a check_governance answer. */
const MAX_ANSWER_BYTES = 1 << 20;

type Obj = Record<string, unknown>;

let agents: { http: http.Agent; https: https.Agent; allowPrivate: boolean } | undefined;
function agentsFor(allowPrivate: boolean) {
  if (agents?.allowPrivate !== allowPrivate) {
    // Private, loopback and link-local addresses are refused at connect time, after DNS, so a
    // name rebound to an internal address is caught too (ALLOW_PRIVATE_WEBHOOK_URLS is the test seam).
    const filter = { allowPrivateIPAddress: allowPrivate, keepAlive: true, maxSockets: 16 };
    agents = { http: new RequestFilteringHttpAgent(filter), https: new RequestFilteringHttpsAgent(filter), allowPrivate };
  }
  return agents;
}

const unavailable = (agentUrl: string, why: string) => new AppError('GOVERNANCE_UNAVAILABLE', `the governance agent at ${agentUrl} could not be consulted: ${why}`.slice(0, 500), undefined, { retry_after: 30 });

/** One signed JSON-RPC POST to an MCP endpoint; the answer as JSON, or from its SSE stream. */
function post(ports: RemoteAgentPorts, url: string, body: Obj, headers: Record<string, string>): Promise<{ json: Obj; session?: string }> {
  const bytes = Buffer.from(JSON.stringify(body));
  const signed = signWebhook({ url, body: bytes }, ports.signer.activeKey('request-signing'), { tag: REQUEST_SIGNING_TAG });
  const target = new URL(url);
  const a = agentsFor(ports.settings.allowPrivateWebhookUrls);
  return new Promise((resolve, reject) => {
    const options = {
      method: 'POST',
      agent: target.protocol === 'https:' ? a.https : a.http,
      headers: { ...headers, ...signed.headers, accept: 'application/json, text/event-stream', 'content-length': String(bytes.length), 'user-agent': 'adcp-gateway-governance' },
    };
    const onResponse = (res: http.IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_ANSWER_BYTES) res.destroy(new Error('answer too large'));
        else chunks.push(c);
      });
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const status = res.statusCode ?? 0;
        if (status === 202 && !text) return resolve({ json: {} });
        if (status < 200 || status >= 300) return reject(new Error(`HTTP ${status}`));
        const session = typeof res.headers['mcp-session-id'] === 'string' ? res.headers['mcp-session-id'] : undefined;
        try {
          const sse = /text\/event-stream/.test(String(res.headers['content-type']));
          const payload = sse ? text.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).filter(Boolean).at(-1) ?? '{}' : text || '{}';
          const json: unknown = JSON.parse(payload);
          resolve({ json: isObject(json) ? json : {}, ...(session ? { session } : {}) });
        } catch {
          reject(new Error('the answer is not JSON'));
        }
      });
    };
    let req: http.ClientRequest;
    try {
      req = target.protocol === 'https:' ? https.request(target, options, onResponse) : http.request(target, options, onResponse);
    } catch (err) {
      return reject(err as Error);
    }
    req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(bytes);
  });
}

/**
 * Calls one tool on a buyer's governance agent over MCP (streamable HTTP): initialize, then the
 * call in the session the agent gives, each request RFC 9421-signed with this seller's
 * request-signing key and carrying the credential the buyer registered. Answers the tool's
 * structured result; an agent that cannot be reached or answers nonsense is GOVERNANCE_UNAVAILABLE.
 */
export async function callRemoteGovernanceAgent(ports: RemoteAgentPorts, agent: GovernanceAgent, tool: string, args: Obj): Promise<Obj> {
  const url = agent.url;
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) throw unavailable(url, 'not an http(s) URL');
  if (new URL(url).protocol !== 'https:' && !ports.settings.allowPrivateWebhookUrls) throw unavailable(url, 'not https');
  const auth = { authorization: `${agent.authentication.schemes[0] === 'Bearer' ? 'Bearer' : agent.authentication.schemes[0]} ${agent.authentication.credentials}`, 'content-type': 'application/json' };
  try {
    const init = await post(ports, url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'adcp-gateway', version: '1' } } }, auth);
    const session: Record<string, string> = init.session ? { 'mcp-session-id': init.session } : {};
    await post(ports, url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { ...auth, ...session });
    const { json } = await post(ports, url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: tool, arguments: args } }, { ...auth, ...session });
    const result = isObject(json.result) ? json.result : undefined;
    if (!result) throw new Error(isObject(json.error) ? `JSON-RPC error ${String(json.error.message ?? json.error.code)}` : 'no result');
    let body = isObject(result.structuredContent) ? result.structuredContent : undefined;
    if (!body && Array.isArray(result.content)) {
      const text = result.content.find((c): c is { text: string } => isObject(c) && typeof c.text === 'string')?.text;
      body = text ? (JSON.parse(text) as Obj) : undefined;
    }
    if (!body) throw new Error('no structured result');
    if (result.isError) {
      const error = isObject(body.adcp_error) ? body.adcp_error : Array.isArray(body.errors) && isObject(body.errors[0]) ? body.errors[0] : {};
      throw new Error(`${String(error.code ?? 'error')}: ${String(error.message ?? '')}`);
    }
    return body;
  } catch (err) {
    if (err instanceof AppError) throw err;
    const message = (err as Error).message;
    throw unavailable(url, /not allowed/i.test(message) ? 'the URL resolves to a non-public address' : message);
  }
}
