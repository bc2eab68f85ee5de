import { governancePlanQueries } from '../../../projections/governance-plans';
import type { TaskPorts } from '../ports';
import { accountDecider, accountStream, type GovernanceAgent } from '../../domain/account/account';
import { AppError } from '../../shared/errors';
import { isPlaceholderAgent } from '../accounts';
import { isObject } from '../../shared/objects';
import { loadState } from '../command-handler';
import { runTaskConsistently, type TaskContext } from '../tasks/context';
import { parseInput } from '../validation';
import type { MediaBuyTerms } from '../../domain/media-buy/media-buy';
import { checkGovernance, reportPlanOutcome } from '../tasks/governance-tasks';
import { callRemoteGovernanceAgent } from './remote-agent';

/**
 * The seller's side of campaign governance. Before it commits a buy on an account whose buyer
 * registered a governance agent (`sync_governance`), the seller asks that agent, with what it
 * will actually deliver (an execution check, `planned_delivery`), and obeys: denied is refused
 * with the agent's findings (GOVERNANCE_DENIED), conditions are accepted and kept on the buy,
 * approved goes ahead. The agent's governance_context is kept on the buy and forwarded on every
 * later check.
 *
 * The agent is this gateway's own governance agent when its URL is this gateway's MCP endpoint
 * (asked in-process, as the same buyer), and any other agent over MCP: RFC 9421-signed, through
 * the SSRF guard, with the credential the buyer registered.
 */
export interface GovernanceVerdict {
  plan_id: string;
  check_id: string;
  status: 'approved' | 'conditions';
  governance_context?: string;
  conditions?: unknown[];
  agent_url: string;
  /** The agent is this gateway's own (asked in-process, as the buyer): later checks go the same way. */
  own?: boolean;
  /** This seller's agent URL as the check named it (`caller`). */
  caller?: string;
}

/** A verdict and the agent that gave it (whose credential is never stored with the buy). */
export interface Consulted {
  verdict: GovernanceVerdict;
  agent: GovernanceAgent;
}

export interface PlannedDelivery {
  total_budget: number;
  currency?: string;
  start_time: string;
  end_time: string;
  channels?: string[];
  countries?: string[];
}

export async function governanceAgentsOf(ctx: TaskContext, accountId: string): Promise<{ agents: readonly GovernanceAgent[]; brand?: string; sandbox?: boolean }> {
  const { state } = await loadState(ctx.ports.store, accountStream(accountId), accountDecider);
  if (state.status === 'none') return { agents: [] };
  return { agents: state.governance_agents ?? [], brand: state.terms.brand.domain, sandbox: state.terms.sandbox };
}

/** Whether a registered agent URL is this gateway's own MCP endpoint (by host, whatever the scheme a proxy terminates). */
export function isOwnAgent(url: string, origins: readonly (string | undefined)[]): boolean {
  if (!URL.canParse(url)) return false;
  const u = new URL(url);
  if (u.pathname.replace(/\/$/, '') !== '/mcp') return false;
  return origins.some((o) => o !== undefined && URL.canParse(o) && new URL(o).host === u.host);
}

/**
 * Consults the account's governance agent on a commitment; undefined when it has none. The plan
 * is the one the request names; failing that, this gateway's own agent picks the buyer's plan for
 * the account's brand whose flight holds the buy (the most recently synced such plan).
 */
export async function consultGovernance(
  ctx: TaskContext,
  accountId: string,
  request: { plan_id?: string; governance_context?: string; tool: 'create_media_buy' | 'update_media_buy'; phase: 'purchase' | 'modification' },
  planned: PlannedDelivery,
): Promise<Consulted | undefined> {
  const { agents, brand, sandbox } = await governanceAgentsOf(ctx, accountId);
  const agent = agents[0];
  if (!agent || (sandbox && isPlaceholderAgent(agent.url))) return undefined;
  const own = isOwnAgent(agent.url, [ctx.origin, ctx.ports.settings.publicUrl]);
  let planId = request.plan_id;
  if (planId === undefined && own && brand) {
    const plans = await governancePlanQueries.forBrand(ctx.ports.readModels, ctx.principal.org, brand);
    const start = Date.parse(planned.start_time);
    planId = (plans.find((p) => Date.parse(p.terms.flight.start) <= start && start < Date.parse(p.terms.flight.end)) ?? plans[0])?.plan_id;
    if (planId === undefined) {
      throw new AppError('GOVERNANCE_DENIED', `your governance agent holds no plan for brand ${brand}: sync a plan before buying on this account`, 'plan_id', { findings: [{ category_id: 'budget_authority', severity: 'critical', explanation: `No governance plan covers brand ${brand}.` }] });
    }
  }
  if (planId === undefined) throw new AppError('INVALID_REQUEST', 'plan_id is required: this account has a governance agent, and the seller checks every buy against your plan', 'plan_id');

  const check = {
    plan_id: planId,
    caller: `${ctx.origin ?? ctx.ports.settings.publicUrl ?? 'https://seller.invalid'}/mcp`,
    tool: request.tool,
    phase: request.phase,
    purchase_type: 'media_buy',
    ...(request.governance_context ? { governance_context: request.governance_context } : {}),
    planned_delivery: {
      total_budget: planned.total_budget,
      ...(planned.currency ? { currency: planned.currency } : {}),
      start_time: planned.start_time,
      end_time: planned.end_time,
      ...(planned.channels?.length ? { channels: planned.channels } : {}),
      ...(planned.countries?.length ? { geo: { countries: planned.countries } } : {}),
    },
  };
  const answer = await askGovernanceAgent(ctx, agent, own, 'check_governance', check);
  const status = answer.status;
  if (status === 'denied') {
    const explanation = typeof answer.explanation === 'string' ? answer.explanation : 'denied by the buyer\'s governance agent';
    throw new AppError('GOVERNANCE_DENIED', `Your governance agent denied this buy: ${explanation}`, undefined, {
      plan_id: planId,
      ...(typeof answer.check_id === 'string' ? { check_id: answer.check_id } : {}),
      ...(Array.isArray(answer.findings) ? { findings: answer.findings } : {}),
      ...(Array.isArray(answer.conditions) ? { conditions: answer.conditions } : {}),
    });
  }
  if (status !== 'approved' && status !== 'conditions') {
    throw new AppError('GOVERNANCE_UNAVAILABLE', `the governance agent at ${agent.url} answered without a decision`, undefined, { retry_after: 30 });
  }
  const verdict: GovernanceVerdict = {
    plan_id: planId,
    check_id: typeof answer.check_id === 'string' ? answer.check_id : '',
    status,
    ...(typeof answer.governance_context === 'string' ? { governance_context: answer.governance_context } : {}),
    ...(status === 'conditions' && Array.isArray(answer.conditions) ? { conditions: answer.conditions.filter(isObject) } : {}),
    agent_url: agent.url,
    ...(own ? { own: true } : {}),
    caller: check.caller,
  };
  return { verdict, agent };
}

/**
 * Runs the rest of a governed command; if it fails after the agent approved, tells the agent the
 * action failed (`report_plan_outcome`), so the plan does not keep budget for a buy that never
 * was. The report is best effort: the buyer's error is the command's, not the report's.
 */
export async function withGovernanceRelease<T>(ctx: TaskContext, consulted: Consulted | undefined, run: () => Promise<T>): Promise<T> {
  if (!consulted) return run();
  const { verdict } = consulted;
  try {
    return await run();
  } catch (err) {
    if (verdict.governance_context) {
      const report = {
        plan_id: verdict.plan_id,
        ...(verdict.check_id ? { check_id: verdict.check_id } : {}),
        idempotency_key: `release-${verdict.check_id || verdict.governance_context}`.slice(0, 255).replace(/[^A-Za-z0-9_.:-]/g, '_'),
        outcome: 'failed',
        governance_context: verdict.governance_context,
        error: { code: err instanceof AppError ? err.code : 'INTERNAL_ERROR', message: (err as Error).message.slice(0, 500) },
      };
      try {
        await askGovernanceAgent(ctx, consulted.agent, isOwnAgent(consulted.agent.url, [ctx.origin, ctx.ports.settings.publicUrl]), 'report_plan_outcome', report);
      } catch (reportErr) {
        ctx.ports.log.warn({ err: reportErr, plan_id: verdict.plan_id }, 'could not report a failed governed action to its governance agent');
      }
    }
    throw err;
  }
}

/**
 * A governed buy's delivery reported to its governance agent: a delivery-phase check_governance
 * with the metrics, as the same action (its governance_context). Answers the agent's check
 * (status, findings); an agent that cannot be reached is GOVERNANCE_UNAVAILABLE.
 */
export async function reportDeliveryToGovernance(ports: TaskPorts, buy: Pick<MediaBuyTerms, 'owner' | 'account_id' | 'governance'>, metrics: Record<string, unknown>): Promise<Record<string, unknown>> {
  const g = buy.governance!;
  const check = {
    plan_id: g.plan_id,
    caller: g.caller ?? `${ports.settings.publicUrl ?? 'https://seller.invalid'}/mcp`,
    phase: 'delivery',
    purchase_type: 'media_buy',
    ...(g.governance_context ? { governance_context: g.governance_context } : {}),
    delivery_metrics: metrics,
  };
  // The seller's own monitor acts for the buyer whose plan it is, on the buyer's own agent; a
  // consumer does not wait for read models (it may be what they wait on).
  const ctx: TaskContext = { ports, principal: { org: buy.owner, keyId: 'governance-monitor', role: 'buyer' } };
  if (g.own) return askGovernanceAgent(ctx, undefined, true, 'check_governance', check, { waitForReadModels: false });
  const { agents } = await governanceAgentsOf(ctx, buy.account_id ?? '');
  return askGovernanceAgent(ctx, agents.find((a) => a.url === g.agent_url) ?? agents[0], false, 'check_governance', check);
}

/**
 * Asks the buyer's governance agent: this gateway's own, in-process as that buyer (waiting, by
 * default, until its read models show what it wrote), or a remote one over MCP, signed.
 */
async function askGovernanceAgent(
  ctx: TaskContext,
  agent: GovernanceAgent | undefined,
  own: boolean,
  tool: 'check_governance' | 'report_plan_outcome',
  args: Record<string, unknown>,
  options: { waitForReadModels?: boolean } = {},
): Promise<Record<string, unknown>> {
  if (own) {
    const task = tool === 'check_governance' ? checkGovernance : reportPlanOutcome;
    return options.waitForReadModels === false ? task.run(parseInput(task.input, args), ctx) : runTaskConsistently(task, args, ctx);
  }
  if (!agent) throw new AppError('GOVERNANCE_UNAVAILABLE', 'the account no longer has a governance agent', undefined, { retry_after: 30 });
  return callRemoteGovernanceAgent(ctx.ports, agent, tool, args);
}
