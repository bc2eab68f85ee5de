import { accountQueries } from '../../../projections/accounts';
import { mediaBuyQueries } from '../../../projections/media-buys';
import { accountDecider, accountStream, ACCOUNT_STATUSES, type AccountStatus } from '../../domain/account/account';
import { creativeDecider, creativeStream, CREATIVE_STATUSES, type CreativeStatus } from '../../domain/creative/creative';
import { deliveryStream, foldDelivery, hourKey, HOUR_MS, packageTotals, type HourDelivery } from '../../domain/delivery/delivery';
import { lifecycleOf, mediaBuyDecider, mediaBuyStream, type MediaBuyStatus } from '../../domain/media-buy/media-buy';
import { taskDecider, taskStream } from '../../domain/task/task';
import { ownerScopedId, publicId } from '../../shared/ids';
import { resolveBuyId } from '../buy-ids';
import { AppError, type ErrorCode } from '../../shared/errors';
import { buyStatus3 } from '../../wire/adcp3/answers';
import { resolveAccount, type ResolvedAccount } from '../accounts';
import { approveTask } from '../approvals';
import { handleCommand, loadState, type CommandContext } from '../command-handler';
import { appendDelivery } from '../delivery-corrections';
import type { TaskContext } from '../tasks/context';
import { forceArm, forceCreateArm } from './directives';
import { forceUpstreamUnavailable } from './upstreams';
import { seedAccount } from './seed-account';
import type { AdcpRelease } from '../../wire/version';
import { seedScenario, SEED_SCENARIOS } from './seeds';
import { ControllerError, requireString } from './errors';
import { isObject } from '../../shared/objects';

export { ControllerError } from './errors';
import { syncPlans } from '../tasks/governance-tasks';
import { runTaskConsistently } from '../tasks/context';

/**
 * `comply_test_controller`: deterministic testing for sandbox accounts (AdCP compliance). Each
 * scenario forces a state the buyer could otherwise only wait for (a seller's decision, a flight
 * date, delivery), and each is an ordinary event in the log. Live accounts are refused: nothing
 * here may touch a buy that spends real money.
 */
export const CONTROLLER_SCENARIOS = [
  'force_media_buy_status',
  'force_account_status',
  'force_creative_status',
  'force_create_media_buy_arm',
  'force_task_completion',
  'simulate_delivery',
  'simulate_budget_spend',
  ...SEED_SCENARIOS,
  'seed_plan',
] as const;

/**
 * What the controller is in each release a call may be answered in. AdCP 3.1 adds scenarios a
 * media-buy seller can honour (`seed_account`, `force_get_products_arm`,
 * `force_upstream_unavailable`) and makes the request's `account.sandbox: true` assertion
 * required; a 3.0 call gets the controller it always had.
 */
export interface ControllerRelease {
  /** The scenarios list_scenarios names and the controller runs (any other is UNKNOWN_SCENARIO). */
  readonly scenarios: readonly string[];
  /** The request must assert `account: {sandbox: true}` (3.1's request schema requires it). */
  readonly sandboxAssertion: boolean;
}
export const CONTROLLER_RELEASES: Readonly<Record<AdcpRelease, ControllerRelease>> = {
  '3.0': { scenarios: CONTROLLER_SCENARIOS, sandboxAssertion: false },
  '3.1': { scenarios: [...CONTROLLER_SCENARIOS, 'seed_account', 'force_get_products_arm', 'force_upstream_unavailable'], sandboxAssertion: true },
};

type Obj = Record<string, unknown>;

/**
 * The account a controller request names, checked to be one of the caller's sandbox accounts.
 * No account (a 3.0 call) and `{sandbox: true}` alone (what 3.1's runner sends on every call)
 * name none: the caller's mode is checked then (refuseLiveCaller), the same rule on both wires,
 * and the scenario's own entities are checked to be sandbox ones, one by one.
 */
async function namedSandboxAccount(ctx: TaskContext, ref: unknown, release: ControllerRelease): Promise<ResolvedAccount | undefined> {
  if (release.sandboxAssertion && (!isObject(ref) || ref.sandbox !== true)) {
    throw new ControllerError('INVALID_PARAMS', 'account: {sandbox: true} is required: the controller acts only for sandbox accounts, and the request must say it means one');
  }
  if (ref === undefined || (isObject(ref) && ref.sandbox === true && ref.account_id === undefined && ref.brand === undefined && ref.operator === undefined)) {
    await refuseLiveCaller(ctx);
    return undefined;
  }
  let account: ResolvedAccount;
  try {
    account = await resolveAccount(ctx, ref);
  } catch (err) {
    if (err instanceof AppError) throw new ControllerError('FORBIDDEN', `the controller acts only for sandbox accounts: ${err.message}`);
    throw err;
  }
  if (!account.sandbox) throw new ControllerError('FORBIDDEN', 'the controller acts only for sandbox accounts; this account is live');
  return account;
}

/**
 * A request that names no account (none on 3.0, `{sandbox: true}` alone on 3.1) still comes from a
 * caller with a mode: one whose accounts are all live (a live-mode principal, as the 3.1 mode-gate
 * storyboard's test kit is) is refused before any scenario runs, whichever release it speaks: a
 * 3.0 call without `account` used to skip this, and a live-only buyer could seed buys that then
 * sat in its live get_media_buys. A caller with a sandbox account, or with none yet (a new buyer
 * about to seed one, as the storyboard runner's fresh buyers do), goes on, and each entity a
 * scenario touches is checked to be sandbox.
 */
async function refuseLiveCaller(ctx: TaskContext): Promise<void> {
  const org = ctx.principal.org;
  if ((await accountQueries.list(ctx.ports.readModels, org, { sandbox: true, limit: 1 })).length > 0) return;
  if ((await accountQueries.list(ctx.ports.readModels, org, { limit: 1 })).length === 0) return;
  throw new ControllerError('FORBIDDEN', 'the controller acts only for sandbox accounts; every account of this caller is live');
}

export async function runController(ctx: TaskContext, request: Obj, release: ControllerRelease = CONTROLLER_RELEASES['3.0']): Promise<Obj> {
  const scenario = request.scenario;
  if (typeof scenario !== 'string') throw new ControllerError('INVALID_PARAMS', 'scenario is required');
  // A named account must be a sandbox one; what a scenario touches must be sandbox too (checked
  // per entity below), so no request can reach a live buy, creative or account.
  const account = await namedSandboxAccount(ctx, request.account, release);
  if (scenario === 'list_scenarios') return { success: true, scenarios: [...release.scenarios] };
  if (!release.scenarios.includes(scenario)) throw new ControllerError('UNKNOWN_SCENARIO', `scenario ${scenario} is not supported; list_scenarios names those that are`);
  const params = request.params === undefined ? {} : request.params;
  if (!isObject(params)) throw new ControllerError('INVALID_PARAMS', 'params must be an object');
  const now = ctx.ports.clock().toISOString();
  const cmd: CommandContext = { now, principal: ctx.principal.keyId, correlationId: ctx.requestId };
  switch (scenario) {
    case 'force_media_buy_status':
      return forceMediaBuyStatus(ctx, params, cmd);
    case 'force_account_status':
      return forceAccountStatus(ctx, params, cmd);
    case 'force_creative_status':
      return forceCreativeStatus(ctx, params, cmd);
    case 'force_create_media_buy_arm':
      return forceCreateArm(ctx, params, cmd);
    case 'force_get_products_arm':
      return forceArm('get_products', ctx, params, cmd);
    case 'force_upstream_unavailable':
      return forceUpstreamUnavailable(ctx, params, cmd);
    case 'force_task_completion':
      return forceTaskCompletion(ctx, params, cmd);
    case 'simulate_delivery':
      return simulateDelivery(ctx, params, cmd);
    case 'simulate_budget_spend':
      return simulateBudgetSpend(ctx, params, cmd);
    case 'seed_plan':
      return seedPlan(ctx, params);
    case 'seed_account':
      return seedAccount(ctx, params, cmd);
    default:
      return seedScenario(ctx, account, scenario, params, cmd);
  }
}

/** One of the caller's buys, bought under a sandbox account (the only kind the controller touches). */
async function sandboxBuy(ctx: TaskContext, mediaBuyId: string) {
  const stored = await resolveBuyId(ctx.ports.store, ctx.principal.org, mediaBuyId);
  const { state } = await loadState(ctx.ports.store, mediaBuyStream(stored), mediaBuyDecider);
  if (state.status === 'none' || state.terms.owner !== ctx.principal.org) throw new ControllerError('NOT_FOUND', `no media buy ${mediaBuyId}`);
  if (!state.terms.sandbox) throw new ControllerError('FORBIDDEN', `media buy ${mediaBuyId} was bought under a live account`);
  return state;
}

/** The 3.0 lifecycle's edges, as a seller's own systems would move a buy along them. */
const FORCE_EDGES: Readonly<Record<string, readonly string[]>> = {
  pending_creatives: ['pending_start', 'active', 'paused', 'rejected', 'canceled'],
  pending_start: ['active', 'paused', 'rejected', 'canceled'],
  active: ['paused', 'completed', 'canceled'],
  paused: ['active', 'completed', 'canceled'],
  completed: [],
  rejected: [],
  canceled: [],
};
const MEDIA_BUY_STATUSES_3 = Object.keys(FORCE_EDGES);

/** The domain status a forced 3.0 status lands on (the finer pending states are active buys). */
const DOMAIN_STATUS: Readonly<Record<string, MediaBuyStatus>> = {
  pending_creatives: 'active',
  pending_start: 'active',
  active: 'active',
  paused: 'paused',
  completed: 'completed',
  rejected: 'rejected',
  canceled: 'canceled',
};

async function forceMediaBuyStatus(ctx: TaskContext, params: Obj, cmd: CommandContext): Promise<Obj> {
  const id = requireString(params, 'media_buy_id');
  const target = requireString(params, 'status');
  if (!MEDIA_BUY_STATUSES_3.includes(target)) throw new ControllerError('INVALID_PARAMS', `status must be one of ${MEDIA_BUY_STATUSES_3.join(', ')}`);
  // The forced status from the stream, not the read model: on PostgreSQL + Kafka the last force
  // may not be projected yet when the next one comes (a storyboard forces active, then completed).
  const buy = await sandboxBuy(ctx, id);
  const previous = buyStatus3(lifecycleOf(buy), ctx.ports.clock());
  if (!FORCE_EDGES[previous]!.includes(target)) throw new ControllerError('INVALID_TRANSITION', `a media buy that is ${previous} cannot become ${target}`, previous);
  await handleCommand(ctx.ports.store, mediaBuyStream(buy.terms.media_buy_id), mediaBuyDecider, { type: 'ForceMediaBuyStatus', status: DOMAIN_STATUS[target]!, viewStatus: target, now: cmd.now }, cmd);
  return { success: true, previous_state: previous, current_state: target, message: `media buy ${id} forced from ${previous} to ${target}` };
}

/** Runs a forced change; the domain refusing it with one of `codes` answers INVALID_TRANSITION from `previous`. */
async function refusedAsTransition<T>(previous: string, codes: readonly ErrorCode[], change: () => Promise<T>): Promise<T> {
  try {
    return await change();
  } catch (err) {
    if (err instanceof AppError && codes.includes(err.code)) throw new ControllerError('INVALID_TRANSITION', err.message, previous);
    throw err;
  }
}

async function forceAccountStatus(ctx: TaskContext, params: Obj, cmd: CommandContext): Promise<Obj> {
  const id = requireString(params, 'account_id');
  const target = requireString(params, 'status');
  if (!(ACCOUNT_STATUSES as readonly string[]).includes(target)) throw new ControllerError('INVALID_PARAMS', `status must be one of ${ACCOUNT_STATUSES.join(', ')}`);
  // The account of that id, else the caller's fixture account of that name (seed_account's).
  let stream = accountStream(id);
  let { state } = await loadState(ctx.ports.store, stream, accountDecider);
  if (state.status === 'none') ({ state } = await loadState(ctx.ports.store, (stream = accountStream(ownerScopedId(ctx.principal.org, id))), accountDecider));
  if (state.status === 'none' || state.terms.owner !== ctx.principal.org) throw new ControllerError('NOT_FOUND', `no account ${id}`);
  if (!state.terms.sandbox) throw new ControllerError('FORBIDDEN', `account ${id} is live`);
  await refusedAsTransition(state.status, ['INVALID_STATE'], () =>
    handleCommand(ctx.ports.store, stream, accountDecider, { type: 'ChangeAccountStatus', status: target as AccountStatus, now: cmd.now }, cmd),
  );
  return { success: true, previous_state: state.status, current_state: target };
}

async function forceCreativeStatus(ctx: TaskContext, params: Obj, cmd: CommandContext): Promise<Obj> {
  const id = requireString(params, 'creative_id');
  const target = requireString(params, 'status');
  if (!(CREATIVE_STATUSES as readonly string[]).includes(target)) throw new ControllerError('INVALID_PARAMS', `status must be one of ${CREATIVE_STATUSES.join(', ')}`);
  const stream = creativeStream(ctx.principal.org, id);
  const { state } = await loadState(ctx.ports.store, stream, creativeDecider);
  if (state.status === 'none') throw new ControllerError('NOT_FOUND', `no creative ${id}`);
  if (!state.content.sandbox) throw new ControllerError('FORBIDDEN', `creative ${id} was not synced under a sandbox account`);
  const reason = typeof params.rejection_reason === 'string' ? params.rejection_reason : typeof params.reason === 'string' ? params.reason : undefined;
  await refusedAsTransition(state.status, ['INVALID_STATE'], () =>
    handleCommand(ctx.ports.store, stream, creativeDecider, { type: 'ForceCreativeStatus', status: target as CreativeStatus, reason: reason?.slice(0, 500), now: cmd.now }, cmd),
  );
  return { success: true, previous_state: state.status, current_state: target };
}

async function forceTaskCompletion(ctx: TaskContext, params: Obj, cmd: CommandContext): Promise<Obj> {
  const given = requireString(params, 'task_id');
  if (!isObject(params.result)) throw new ControllerError('INVALID_PARAMS', 'params.result (the completion payload) is required');
  // The caller's own forced id first, then a task id this seller issued.
  let taskId = ownerScopedId(ctx.principal.org, given);
  let { state, history } = await loadState(ctx.ports.store, taskStream(taskId), taskDecider);
  if (state.status === 'none') {
    taskId = given;
    ({ state, history } = await loadState(ctx.ports.store, taskStream(taskId), taskDecider));
  }
  if (state.status === 'none' || state.owner !== ctx.principal.org) throw new ControllerError('NOT_FOUND', `no task ${given}`);
  // Completing a task carries out what it waits for: only when that touches sandbox things alone.
  if (state.taskType === 'create_media_buy') {
    const { state: buy } = await loadState(ctx.ports.store, mediaBuyStream(state.resourceId), mediaBuyDecider);
    if (buy.status === 'none' || !buy.terms.sandbox) throw new ControllerError('FORBIDDEN', `task ${taskId} is not for a sandbox buy`);
  } else if (state.taskType === 'sync_creatives') {
    const request = (history.find((e) => e.type === 'TaskSubmitted')?.data as { request?: Obj } | undefined)?.request ?? {};
    await assertSandboxSync(ctx, taskId, request);
  } else {
    throw new ControllerError('FORBIDDEN', `task ${taskId} (${state.taskType}) is not one the controller completes`);
  }
  const previous = state.status;
  await refusedAsTransition(previous, ['INVALID_STATE', 'CONFLICT'], () => approveTask(ctx.ports, taskId, 'Completed by the compliance test controller', cmd));
  return { success: true, previous_state: previous, current_state: 'completed' };
}

/**
 * A creative sync waiting for the seller's review may be completed by the controller only when it
 * was made under a sandbox account and changes no live creative (the seller reviews those).
 */
async function assertSandboxSync(ctx: TaskContext, taskId: string, request: Obj): Promise<void> {
  let account: ResolvedAccount | undefined;
  try {
    account = request.account === undefined ? undefined : await resolveAccount(ctx, request.account);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
  }
  if (!account?.sandbox) throw new ControllerError('FORBIDDEN', `task ${taskId} is not for a sandbox account`);
  if (request.delete_missing === true) throw new ControllerError('FORBIDDEN', `task ${taskId} archives every creative it does not name, live ones too`);
  const creatives = Array.isArray(request.creatives) ? request.creatives : [];
  for (const c of creatives) {
    const id = isObject(c) && typeof c.creative_id === 'string' ? c.creative_id : undefined;
    if (id === undefined) continue;
    const { state } = await loadState(ctx.ports.store, creativeStream(ctx.principal.org, id), creativeDecider);
    if (state.status !== 'none' && !state.content.sandbox) throw new ControllerError('FORBIDDEN', `task ${taskId} changes creative ${id}, which was not synced under a sandbox account`);
  }
  const assigned = new Set(isObject(request.assignments) ? Object.values(request.assignments).flatMap((ids) => (Array.isArray(ids) ? ids : [])) : []);
  if (assigned.size === 0) return;
  const buys = await mediaBuyQueries.list(ctx.ports.readModels, ctx.principal.org, { statuses: ['pending', 'active', 'paused'], limit: 10_000 });
  const live = buys.find((b) => !b.terms.sandbox && b.terms.packages.some((p) => assigned.has(p.package_id)));
  if (live) throw new ControllerError('FORBIDDEN', `task ${taskId} assigns creatives to media buy ${publicId(live.media_buy_id)}, which was bought under a live account`);
}

const count = (v: unknown, name: string): number => {
  if (v === undefined) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new ControllerError('INVALID_PARAMS', `params.${name} must be a whole number ≥ 0`);
  return v;
};

/**
 * Adds delivery to a sandbox buy in the current hour, spread over its packages by budget. The
 * built-in ad server leaves sandbox buys alone, so what the controller adds is all there is.
 */
async function simulateDelivery(ctx: TaskContext, params: Obj, cmd: CommandContext): Promise<Obj> {
  const id = requireString(params, 'media_buy_id');
  const impressions = count(params.impressions, 'impressions');
  const clicks = count(params.clicks, 'clicks');
  const spendParam = params.reported_spend ?? params.spend;
  const spendAmount = isObject(spendParam) ? spendParam.amount : spendParam;
  if (spendAmount !== undefined && (typeof spendAmount !== 'number' || !Number.isFinite(spendAmount) || spendAmount < 0)) throw new ControllerError('INVALID_PARAMS', 'params.reported_spend.amount must be a number ≥ 0');
  const buy = await sandboxBuy(ctx, id);
  const spendCents = spendAmount !== undefined ? Math.round((spendAmount as number) * 100) : 0;
  await addDelivery(ctx, buy, { impressions, clicks, spendCents }, cmd);
  const totals = await deliveredTotals(ctx, buy.terms.media_buy_id);
  return {
    success: true,
    simulated: { media_buy_id: id, impressions, clicks, reported_spend: { amount: spendCents / 100, currency: buy.terms.currency } },
    cumulative: { impressions: totals.impressions, clicks: totals.clicks, reported_spend: { amount: totals.spendCents / 100, currency: buy.terms.currency } },
    message: `added ${impressions} impressions, ${clicks} clicks and ${spendCents / 100} ${buy.terms.currency} to media buy ${id}`,
  };
}

async function simulateBudgetSpend(ctx: TaskContext, params: Obj, cmd: CommandContext): Promise<Obj> {
  const pct = params.spend_percentage;
  if (typeof pct !== 'number' || !Number.isFinite(pct) || pct < 0 || pct > 100) throw new ControllerError('INVALID_PARAMS', 'params.spend_percentage must be a number from 0 to 100');
  const id = requireString(params, 'media_buy_id');
  const buy = await sandboxBuy(ctx, id);
  const target = Math.round(buy.terms.total_budget * 100 * (pct / 100));
  const before = await deliveredTotals(ctx, buy.terms.media_buy_id);
  const add = Math.max(0, target - before.spendCents);
  await addDelivery(ctx, buy, { impressions: 0, clicks: 0, spendCents: add }, cmd);
  return {
    success: true,
    simulated: { media_buy_id: id, spend_percentage: pct, spend: { amount: add / 100, currency: buy.terms.currency } },
    cumulative: { spend: { amount: Math.max(target, before.spendCents) / 100, currency: buy.terms.currency } },
  };
}

/** The buy's delivery so far, over all its packages (spend in cents). */
async function deliveredTotals(ctx: TaskContext, id: string) {
  const totals = { impressions: 0, clicks: 0, spendCents: 0 };
  for (const p of packageTotals(foldDelivery(await ctx.ports.store.readStream(deliveryStream(id)))).values()) {
    totals.impressions += p.impressions;
    totals.clicks += p.clicks;
    totals.spendCents += p.spend;
  }
  return totals;
}

/** Splits `n` over weights in whole units (the last share takes the rounding). */
function split(n: number, weights: number[]): number[] {
  const total = weights.reduce((s, w) => s + w, 0) || 1;
  let given = 0;
  return weights.map((w, i) => {
    const share = i === weights.length - 1 ? n - given : Math.floor((n * w) / total);
    given += share;
    return share;
  });
}

async function addDelivery(
  ctx: TaskContext,
  buy: { terms: { media_buy_id: string; owner: string; currency: string; packages: readonly { package_id: string; budget: number }[] } },
  add: { impressions: number; clicks: number; spendCents: number },
  cmd: CommandContext,
): Promise<void> {
  const hourStart = new Date(Math.floor(ctx.ports.clock().getTime() / HOUR_MS) * HOUR_MS).toISOString();
  const weights = buy.terms.packages.map((p) => p.budget);
  const [imps, clicks, spend] = [split(add.impressions, weights), split(add.clicks, weights), split(add.spendCents, weights)];
  await appendDelivery(
    ctx.ports.store,
    buy.terms.media_buy_id,
    (state) => {
      const fresh: HourDelivery[] = [];
      const adjusted: { hour: HourDelivery; previous: HourDelivery }[] = [];
      buy.terms.packages.forEach((p, i) => {
        const previous = state.hours.get(hourKey(p.package_id, hourStart));
        const hour = { package_id: p.package_id, hour_start: hourStart, impressions: imps[i]! + (previous?.impressions ?? 0), clicks: clicks[i]! + (previous?.clicks ?? 0), spend_cents: spend[i]! + (previous?.spend_cents ?? 0) };
        if (previous) adjusted.push({ hour, previous });
        else fresh.push(hour);
      });
      return [
        ...(fresh.length ? [{ type: 'DeliveryRecorded' as const, data: { media_buy_id: buy.terms.media_buy_id, owner: buy.terms.owner, currency: buy.terms.currency, hours: fresh, through: new Date(Math.max(state.through ?? 0, Date.parse(hourStart))).toISOString() } }] : []),
        ...adjusted.map((a) => ({ type: 'DeliveryAdjusted' as const, data: { media_buy_id: buy.terms.media_buy_id, owner: buy.terms.owner, hour: a.hour, previous: a.previous, reason: 'simulated by the compliance test controller', at: cmd.now } })),
      ];
    },
    cmd,
  );
}

/**
 * `seed_plan`: a governance plan for the caller, as if it had synced it (this gateway is also
 * the buyer's governance agent). The fixture is the plan; the plan_id names it.
 */
async function seedPlan(ctx: TaskContext, params: Obj): Promise<Obj> {
  const planId = requireString(params, 'plan_id');
  const fixture = params.fixture === undefined ? {} : params.fixture;
  if (!isObject(fixture)) throw new ControllerError('INVALID_PARAMS', 'params.fixture must be an object');
  try {
    await runTaskConsistently(syncPlans, { plans: [{ ...fixture, plan_id: planId }] }, ctx);
  } catch (err) {
    if (err instanceof AppError) throw new ControllerError('INVALID_PARAMS', `params.fixture is not a plan: ${err.message}`);
    throw err;
  }
  return { success: true, message: `plan ${planId} seeded` };
}
