import { createHash } from 'node:crypto';
import type { CommandContext } from '../command-handler';
import type { TaskContext } from '../tasks/context';
import { ControllerError, requireString } from './errors';

/**
 * AdCP 3.1's `force_upstream_unavailable`: a sandbox marks the upstream one of its tools depends
 * on as unreachable, so its next reads exercise the stale-cache path (the `stale_response_advisory`
 * storyboard). It lasts for the caller's compliance session: every later call of that tool under
 * one of the caller's sandbox accounts (never a live one) is served from what the seller last had,
 * marked STALE_RESPONSE. An event on the caller's own stream, like every other directive.
 *
 * The one upstream this seller can serve stale is get_products' inventory (the product catalog):
 * its answer is the catalog as last read, aged from the moment the upstream went away.
 */
export const STALE_CAPABLE_TOOLS = ['get_products'] as const;
const DEFAULT_UPSTREAM = 'inventory-service';

const upstreamStream = (owner: string) => `sandbox-upstreams-${createHash('sha256').update(owner).digest('base64url').slice(0, 22)}`;

export async function forceUpstreamUnavailable(ctx: TaskContext, params: Record<string, unknown>, cmd: CommandContext): Promise<Record<string, unknown>> {
  const tool = requireString(params, 'tool');
  if (tool !== '*' && !(STALE_CAPABLE_TOOLS as readonly string[]).includes(tool)) {
    throw new ControllerError('INVALID_PARAMS', `params.tool must be ${STALE_CAPABLE_TOOLS.join(', ')} or '*': the tools this seller can serve from cache when their upstream is down`);
  }
  if (params.upstream_name !== undefined && (typeof params.upstream_name !== 'string' || !/^[\w .:/-]{1,128}$/.test(params.upstream_name))) {
    throw new ControllerError('INVALID_PARAMS', 'params.upstream_name must be 1-128 of letters, digits, space and _ . : / -');
  }
  const upstream = (params.upstream_name as string | undefined) ?? DEFAULT_UPSTREAM;
  await ctx.ports.store.append(upstreamStream(ctx.principal.org), [{ type: 'SandboxUpstreamForcedUnavailable', data: { owner: ctx.principal.org, tool, upstream, at: cmd.now }, metadata: { time: cmd.now, principal: cmd.principal } }]);
  return { success: true, previous_state: 'available', current_state: 'unavailable', message: `upstream ${upstream} of ${tool === '*' ? 'every tool' : tool} is unreachable for this sandbox's later calls` };
}

/** The outage a sandbox forced on `tool`'s upstream, if any: its name and since when. */
export async function forcedOutage(ctx: TaskContext, tool: string): Promise<{ upstream: string; since: string } | undefined> {
  const history = await ctx.ports.store.readStream(upstreamStream(ctx.principal.org));
  for (let i = history.length - 1; i >= 0; i--) {
    const e = history[i]!.data as { tool: string; upstream: string; at: string };
    if (e.tool === tool || e.tool === '*') return { upstream: e.upstream, since: e.at };
  }
  return undefined;
}
