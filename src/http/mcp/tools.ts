import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { App } from '../../services';
import { tasks } from '../../application/tasks';
import type { TaskContext } from '../../application/tasks/context';
import { AppError } from '../../shared/errors';
import type { AnswerCodec } from '../../wire/answer-codec';
import { codecFor, codecForArgs } from '../../wire/codecs';
import { negotiateVersion } from '../../wire/version';
import { capabilities } from './capabilities';
import { CONTROLLER_RELEASES, ControllerError, runController } from '../../application/sandbox/controller';
import { runTaskInRelease } from '../release-task';
import { forwardToAgent, RemoteAgentError } from '../../application/agent-forwarding';
import { isObject } from '../../shared/objects';

/**
 * One call of the sales agent's tools, over MCP or A2A (both speak AdCP 3.x: each call is answered
 * in the release it negotiates, 3.0 unless it pins another).
 */
export interface McpContext extends TaskContext {
  app: App;
  /** The origin this request reached us at: our own agent URL is `${origin}/mcp`. */
  origin: string;
  wire: 'adcp3';
  /** Set when the request itself is refused (e.g. forbidden keys): every call answers it as its error. */
  refusal?: AppError;
}

type Obj = Record<string, unknown>;

/** The media-buy tasks AdCP names, run by the application and answered in 3.0's shapes. */
const TASK_TOOLS = ['get_products', 'list_creative_formats', 'create_media_buy', 'update_media_buy', 'get_media_buys', 'sync_creatives', 'list_creatives', 'get_media_buy_delivery', 'tasks_get', 'tasks_list', 'get_task_status', 'list_tasks', 'sync_accounts', 'list_accounts', 'preview_creative', 'sync_audiences', 'sync_catalogs', 'sync_event_sources', 'log_event', 'get_account_financials', 'provide_performance_feedback', 'build_creative', 'sync_governance', 'sync_plans', 'check_governance', 'report_plan_outcome', 'get_plan_audit_logs'] as const;

/** AdCP 3.0 requires an idempotency_key on every mutating request. */
const MUTATING = new Set(['create_media_buy', 'update_media_buy', 'sync_creatives', 'sync_accounts', 'sync_audiences', 'sync_catalogs', 'sync_event_sources', 'log_event', 'provide_performance_feedback', 'build_creative', 'sync_governance', 'sync_plans', 'report_plan_outcome']);

interface ToolDef {
  description: string;
  /** Runs the tool; its answer is in `codec`'s release (the call's negotiated one). */
  run(args: Obj, ctx: McpContext, codec: AnswerCodec): Promise<Obj>;
}

const tools: Readonly<Record<string, ToolDef>> = {
  get_adcp_capabilities: {
    description: 'What this agent supports: AdCP versions, protocols, media-buy features, idempotency, webhook signing.',
    run: async (_args, ctx, codec) => codec.capabilities(await capabilities(ctx.app, ctx.origin, CONTROLLER_RELEASES[codec.version])),
  },
  ...Object.fromEntries(
    TASK_TOOLS.map((name) => [
      name,
      {
        description: tasks[name]!.description,
        async run(args: Obj, ctx: McpContext, codec: AnswerCodec) {
          if (MUTATING.has(name) && args.idempotency_key === undefined) {
            throw new AppError('INVALID_REQUEST', `idempotency_key is required on ${name} (AdCP 3.0: every mutating request carries one)`, 'idempotency_key');
          }
          const result = await runTaskInRelease(name, args, ctx, codec.version);
          const answer = codec.answer(name, result, { now: ctx.app.clock() });
          // A replay says so whatever its release's encoder keeps of the result.
          return result.replayed === true ? { ...answer, replayed: true } : answer;
        },
      } satisfies ToolDef,
    ]),
  ),
  comply_test_controller: {
    description: 'Deterministic testing for sandbox accounts: force statuses, simulate delivery, seed fixtures (refused for live accounts).',
    run: async (args, ctx, codec) => codec.answer('comply_test_controller', await runController(ctx, args, CONTROLLER_RELEASES[codec.version]), { now: ctx.app.clock() }),
  },
  call_adcp_agent: {
    description: 'Runs an AdCP task: {task, params} on this agent, or on agent_url when the operator configured credentials for that agent.',
    async run(args, ctx, codec) {
      const { task, params, agent_url } = args;
      if (typeof task !== 'string' || !/^[a-z][a-z0-9_/]{0,63}$/.test(task) || task === 'call_adcp_agent' || (!Object.hasOwn(tools, task) && agent_url === undefined)) {
        throw new AppError('INVALID_REQUEST', `task must name one of this agent's tools: ${Object.keys(tools).filter((t) => t !== 'call_adcp_agent').join(', ')}`, 'task');
      }
      if (params !== undefined && !isObject(params)) throw new AppError('INVALID_REQUEST', 'params must be an object', 'params');
      if (agent_url !== undefined && agent_url !== `${ctx.origin}/mcp` && agent_url !== `${ctx.origin}/a2a`) {
        if (typeof agent_url !== 'string') throw new AppError('INVALID_REQUEST', 'agent_url must be a string', 'agent_url');
        return forwardToAgent(ctx.app.config, agent_url, task, params ?? {});
      }
      return tools[task]!.run(params ?? {}, ctx, codec);
    },
  },
};

/** Names the SDK's clients also call (MCP tool names may carry a slash; AdCP's legacy name does). */
const ALIASES: Readonly<Record<string, string>> = { 'tasks/get': 'tasks_get', 'tasks/list': 'tasks_list' };

/**
 * AdCP 3 envelopes carry the task status at `status`. A synchronous answer is `completed`;
 * create and update carry the media buy's status there instead (3.0's success arms), and an
 * asynchronous answer already says `submitted`.
 */
export function withTaskStatus(tool: string, body: Obj): Obj {
  if (body.status !== undefined || tool === 'create_media_buy' || tool === 'update_media_buy' || tool === 'comply_test_controller') return body;
  return { status: 'completed', ...body };
}

/** `tools/list`: open input schemas (AdCP clients validate against the protocol's schemas). Built once: the tools never change. */
export function toolList(): Tool[] {
  // Every tools/list answer and the A2A card share it (they read it, never change it).
  return (listed ??= [...Object.entries(tools), ...Object.entries(ALIASES).map(([alias, name]) => [alias, tools[name]!] as const)].map(([name, t]) => ({
    name,
    description: t.description,
    inputSchema: { type: 'object' as const, properties: {}, additionalProperties: true },
  })));
}

let listed: Tool[] | undefined;

/** An MCP tool result: the answer as `structuredContent`, its JSON as the text fallback. */
function toolResult(body: Obj, isError = false): CallToolResult {
  // Members in the order the SDK's result schema wrote them when it re-parsed every result.
  const result: CallToolResult = { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body };
  if (isError) result.isError = true;
  return result;
}

/**
 * One `tools/call`. Its release is negotiated from the arguments' `adcp_version` and
 * `adcp_major_version` (`wire/version.ts`: 3.0 without a pin), and that release's codec answers.
 * Success: the answer as `structuredContent`, its JSON as the text fallback. Failure: `isError`
 * with `adcp_error` and the payload's `errors[]` (AdCP's two layers). Either way the request's
 * `context` is echoed, and, once a release is negotiated, the codec's envelope (the version echo).
 */
export async function callTool(name: string, rawArgs: unknown, ctx: McpContext): Promise<CallToolResult> {
  const args = isObject(rawArgs) ? rawArgs : {};
  const echo = isObject(args.context) ? { context: args.context } : {};
  let codec = codecFor();
  let envelope: Obj = {};
  try {
    if (ctx.refusal) {
      // Refused before the tool runs, in the release the arguments pin when they pin one validly.
      ({ codec, envelope } = codecForArgs(args));
      throw ctx.refusal;
    }
    if (Object.hasOwn(ALIASES, name)) name = ALIASES[name]!;
    if (!Object.hasOwn(tools, name)) throw new AppError('INVALID_REQUEST', `unknown tool "${name}"; tools/list names this agent's tools`, 'name');
    if (rawArgs !== undefined && !isObject(rawArgs)) throw new AppError('INVALID_REQUEST', 'arguments must be an object', 'arguments');
    if (ctx.principal.role !== 'buyer' && name !== 'get_adcp_capabilities') {
      throw new AppError('FORBIDDEN', `${name} is for buyers; this credential's role is ${ctx.principal.role}`);
    }
    const negotiated = negotiateVersion(args);
    codec = codecFor(negotiated.version);
    envelope = codec.envelope(negotiated);
    // A task this call starts records the release it is answered in (its later answers use it).
    const answer = withTaskStatus(name, await tools[name]!.run(args, { ...ctx, release: negotiated.version }, codec));
    // A mutating answer names the key it answers for (buyers correlate replays by it).
    const key = MUTATING.has(name) && typeof args.idempotency_key === 'string' ? { idempotency_key: args.idempotency_key } : {};
    // The envelope first: an answer forwarded from another agent (call_adcp_agent) keeps its own echo.
    return toolResult({ ...envelope, ...answer, ...key, ...echo });
  } catch (err) {
    if (err instanceof RemoteAgentError) return toolResult({ ...err.body, ...echo }, true);
    if (err instanceof ControllerError) {
      const body = { success: false, error: err.code, error_detail: err.message, ...(err.currentState ? { current_state: err.currentState } : {}) };
      return toolResult({ ...codec.answer('comply_test_controller', body, { now: ctx.app.clock() }), ...envelope, ...echo }, true);
    }
    if (!(err instanceof AppError)) {
      ctx.app.log.error({ err, tool: name }, 'unhandled MCP tool error');
      err = new AppError('UNAVAILABLE', 'internal error');
    }
    // Through call_adcp_agent, the fields an error names are those of the task's own params.
    const [task, request] = name === 'call_adcp_agent' && typeof args.task === 'string' ? [args.task, args.params] : [name, args];
    const error = codec.error(task, request, err as AppError);
    ctx.app.log.debug({ tool: name, code: error.code, field: (error as { field?: string }).field, message: error.message }, 'MCP tool answered an error');
    return toolResult({ adcp_error: error, errors: [error], ...envelope, ...codec.failedEnvelope(), ...echo }, true);
  }
}
