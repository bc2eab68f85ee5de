import type { Config } from '../config';
import { AppError } from '../shared/errors';
import { addressesOf } from '../shared/url-guard';

/** The slice of `@adcp/sdk` forwarding uses (loaded on first use: it is ESM underneath). */
type CallMcpTool = (agentUrl: string, toolName: string, args: Record<string, unknown>, authToken?: string) => Promise<unknown>;
let callMcpTool: CallMcpTool | undefined;

/**
 * `call_adcp_agent` naming another agent: the task goes to that agent over MCP with `@adcp/sdk`'s
 * own client, presenting the token the operator configured for it (FORWARD_AGENT_CREDENTIALS).
 * An agent without configured credentials is refused, so no buyer can use the gateway as an
 * open relay, and the address is checked first: https to a public address only, except for
 * REGISTRY_ORIGIN_OVERRIDES (the test seam that maps a domain to a loopback origin).
 */
export async function forwardToAgent(config: Pick<Config, 'forwardAgentCredentials' | 'originOverrides'>, agentUrl: string, task: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (!URL.canParse(agentUrl)) throw new AppError('INVALID_REQUEST', 'agent_url must be an absolute URL', 'agent_url');
  const url = new URL(agentUrl);
  const token = config.forwardAgentCredentials.get(url.href);
  if (!token) throw new AppError('UNSUPPORTED_FEATURE', `this gateway forwards only to agents its operator configured credentials for, and ${url.href} is not one`, 'agent_url');
  let target = url.href;
  const override = config.originOverrides.get(url.hostname);
  if (override) {
    target = new URL(`${url.pathname}${url.search}`, override).href;
  } else {
    if (url.protocol !== 'https:') throw new AppError('VALIDATION_ERROR', 'agent_url must use https', 'agent_url');
    const { addresses, nonPublic } = await addressesOf(url.hostname);
    if (addresses.length === 0) throw new AppError('UNAVAILABLE', `agent_url ${url.hostname} does not resolve`, 'agent_url');
    if (nonPublic) throw new AppError('VALIDATION_ERROR', `agent_url resolves to a non-public address (${nonPublic})`, 'agent_url');
  }
  callMcpTool ??= ((await import('@adcp/sdk')) as unknown as { callMCPTool: CallMcpTool }).callMCPTool;
  let result: unknown;
  try {
    result = await callMcpTool(target, task, params, token);
  } catch (err) {
    throw new AppError('UNAVAILABLE', `the agent at ${url.href} did not answer: ${(err as Error).message.slice(0, 300)}`, 'agent_url');
  }
  const r = (typeof result === 'object' && result !== null ? result : {}) as { isError?: boolean; structuredContent?: Record<string, unknown>; content?: { type?: string; text?: string }[] };
  let body = r.structuredContent;
  if (!body) {
    const text = r.content?.find((c) => c.type === 'text')?.text;
    try {
      body = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
    } catch {
      body = undefined;
    }
  }
  if (!body) throw new AppError('UNAVAILABLE', `the agent at ${url.href} answered without a structured result`, 'agent_url');
  if (r.isError) throw new RemoteAgentError(body);
  return body;
}

/** The other agent answered an error: relayed as it is, for the buyer to read. */
export class RemoteAgentError extends Error {
  constructor(readonly body: Record<string, unknown>) {
    super('the forwarded task failed on the other agent');
  }
}
