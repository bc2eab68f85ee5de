import type { AppError } from '../../shared/errors';
import type { AnswerCodec, AnswerContext } from '../answer-codec';
import { assetRequirements, type AssetLike, type FormatLike } from './format-requirements';
import { CHANNEL_TO_ADCP3 } from '../requests';
import { adcpErrorFor } from './errors';

/**
 * AdCP 3.0 answers, from the spec-shaped results the tasks return (the domain's one model).
 * 3.0 as `@adcp/sdk` 6.11 bundles it: seller-assigned ids without `buyer_ref`, the 3.0 media-buy
 * lifecycle (`pending_creatives`, `pending_start`, …), pricing as `fixed_price` / `floor_price`,
 * products with `reporting_capabilities`, the submitted envelope for work awaiting a human.
 */
type Obj = Record<string, any>;

export type { AnswerContext } from '../answer-codec';

/** The spec's pricing models by their 3.0 names; an auction is a `cpm` with a `floor_price`. */
const PRICING_MODEL: Readonly<Record<string, string>> = { 'cpm-auction': 'cpm', 'flat-fee': 'flat_rate', cpm: 'cpm', cpc: 'cpc', cpcv: 'cpcv', cpv: 'cpv', vcpm: 'vcpm', cpp: 'cpp', cpa: 'cpa', time: 'time' };
export const pricingModel3 = (m: string) => PRICING_MODEL[m] ?? m;

function pricingOption(o: Obj): Obj {
  const { price, floor, pricing_model, ...rest } = o;
  return {
    ...rest,
    pricing_model: pricingModel3(pricing_model),
    ...(price !== undefined ? { fixed_price: price } : {}),
    ...(floor !== undefined ? { floor_price: floor } : {}),
  };
}

/** What this seller reports and how (every product alike: the delivery simulator's hourly rows). */
const REPORTING_CAPABILITIES = {
  available_reporting_frequencies: ['hourly', 'daily', 'monthly'],
  expected_delay_minutes: 60,
  timezone: 'UTC',
  supports_webhooks: true,
  available_metrics: ['impressions', 'spend', 'clicks', 'ctr'],
  date_range_support: 'date_range',
};

const channels3 = (cs: string[] | undefined) => cs && [...new Set(cs.map((c) => CHANNEL_TO_ADCP3[c] ?? c))];

export function product3(p: Obj): Obj {
  const { relevance_score: _score, requires_approval: _approval, targeting: _targeting, channels, pricing_options, brief_relevance, ...rest } = p;
  return {
    ...rest,
    ...(channels ? { channels: channels3(channels) } : {}),
    pricing_options: (pricing_options as Obj[]).map(pricingOption),
    reporting_capabilities: REPORTING_CAPABILITIES,
    ...(brief_relevance !== undefined ? { brief_relevance } : {}),
  };
}

/**
 * A format's assets as 3.0 individual assets (`item_type`), each with the requirements this seller
 * checks in sync_creatives (dimensions, durations, URL schemes, catalog type; see
 * wire/adcp3/format-requirements), and nothing it does not check (file types and sizes).
 */
export function format3(f: Obj): Obj {
  const { type: _type, dimensions, requirements: _requirements, assets, ...rest } = f;
  return {
    ...rest,
    ...(dimensions ? { renders: [{ role: 'primary', dimensions: { width: dimensions.width, height: dimensions.height } }] } : {}),
    assets: ((assets ?? []) as Obj[]).map((a) => {
      const { schema: _schema, requirements: _stated, ...asset } = a;
      const requirements = assetRequirements(f as FormatLike, a as AssetLike);
      return { item_type: 'individual', ...asset, ...(Object.keys(requirements).length ? { requirements } : {}) };
    }),
  };
}

/**
 * The 3.0 lifecycle is finer than the spec's: an active buy still waiting for creatives is
 * `pending_creatives`, one whose flight has not begun `pending_start`. A buy awaiting the seller's
 * approval has no 3.0 status of its own; it has not started, so `pending_start` (and it names no
 * `confirmed_at`).
 */
export function mediaBuyStatus3(status: string, buy: { start_time?: string; packages?: readonly { creative_ids?: readonly string[] }[]; activated?: boolean }, now: Date): string {
  if (status === 'pending') return 'pending_start';
  if (status !== 'active' || buy.activated) return status;
  if (buy.packages?.some((p) => !p.creative_ids?.length)) return 'pending_creatives';
  if (buy.start_time && Date.parse(buy.start_time) > now.getTime()) return 'pending_start';
  return 'active';
}

/**
 * What a buy's 3.0 status is computed from: the domain status, the flight's start, the packages'
 * creatives, whether it was ever paused, and what the sandbox controller forced.
 */
export interface BuyLifecycle {
  status: string;
  start_time?: string;
  packages?: readonly { creative_ids?: readonly string[] }[];
  activated?: boolean;
  forced_status?: string | null;
}

/**
 * The one 3.0 status of a buy, as every 3.0 answer tells it: get_media_buys, get_media_buy_delivery,
 * create and update answers, task results and webhooks, and delivery reports.
 */
export function buyStatus3(b: BuyLifecycle, now: Date): string {
  return b.forced_status ?? mediaBuyStatus3(b.status, b, now);
}

function package3(p: Obj): Obj {
  const { creative_ids, buyer_ref: _ref, ...rest } = p;
  return { ...rest, ...(creative_ids?.length ? { creative_assignments: (creative_ids as string[]).map((creative_id) => ({ creative_id })) } : {}) };
}

/** What 3.0 buyers may do next with a buy, by its 3.0 status. */
export function validActions(status: string): string[] {
  switch (status) {
    case 'pending_creatives':
    case 'pending_start':
      return ['cancel', 'update_budget', 'update_dates', 'update_packages', 'sync_creatives'];
    case 'active':
      return ['pause', 'cancel', 'update_budget', 'update_dates', 'update_packages', 'sync_creatives'];
    case 'paused':
      return ['resume', 'cancel', 'update_budget', 'update_dates', 'update_packages'];
    default:
      return [];
  }
}

/** One media buy as 3.0 shows it (get_media_buys, create's success arm). */
export function mediaBuy3(b: Obj, now: Date): Obj {
  const status = buyStatus3(b as BuyLifecycle, now);
  const { forced_status: _forced, activated: _activated, buyer_ref: _ref, task_id: _task, message: _message, packages, changed: _changed, confirmed_at, webhook_activity, impairments, health, ...rest } = b;
  return {
    ...rest,
    status,
    // Only a confirmed buy says when (3.0 has no null here): one awaiting approval, or rejected, says nothing.
    ...(b.status === 'pending' || b.status === 'rejected' ? {} : { confirmed_at: confirmed_at ?? b.created_at ?? now.toISOString() }),
    packages: (packages as Obj[]).map(package3),
    valid_actions: validActions(status),
    ...(health ? { health } : {}),
    ...(impairments?.length ? { impairments } : {}),
    ...(webhook_activity ? { webhook_activity } : {}),
  };
}

export const answers3: Readonly<Record<string, (result: Obj, ctx: AnswerContext) => Obj>> = {
  // `cache_scope` is 3.1's (adcp31/products.ts): 3.0 answers never carried it.
  get_products({ cache_scope: _scope, ...r }) {
    // A curation the seller queued (a sandbox's forced submitted arm): the products come with its task.
    if (r.status === 'pending') return { status: 'submitted', task_id: r.task_id, message: r.message };
    return { ...r, products: (r.products as Obj[]).map(product3) };
  },

  list_creative_formats: (r) => ({ ...r, formats: (r.formats as Obj[]).map(format3) }),

  create_media_buy(r, { now }) {
    if (r.status === 'pending') return { status: 'submitted', task_id: r.task_id, message: r.message };
    // Confirmed when created (or, answered in the approval's webhook and task result, when approved).
    const { total_budget: _t, currency: _c, start_time: _s, end_time: _e, ...buy } = mediaBuy3({ ...r, confirmed_at: r.confirmed_at ?? now.toISOString() }, now);
    return buy;
  },

  update_media_buy(r, { now }) {
    const buy = mediaBuy3(r, now);
    return {
      media_buy_id: buy.media_buy_id,
      status: buy.status,
      revision: buy.revision,
      implementation_date: r.status === 'pending' ? null : now.toISOString(),
      affected_packages: buy.packages,
      valid_actions: buy.valid_actions,
    };
  },

  get_media_buys: (r, { now }) => ({ ...r, media_buys: (r.media_buys as Obj[]).map((b) => mediaBuy3(b, now)) }),

  get_media_buy_delivery(r, { now }) {
    const { delivery: _d, by_package: _b, timeseries: _t, ...rest } = r;
    return {
      ...rest,
      media_buy_deliveries: (r.media_buy_deliveries as Obj[]).map(({ timeseries, currency: _c, status, by_package, start_time, end_time: _end, activated, forced_status, ...d }) => ({
        ...d,
        // The buy's status as get_media_buys tells it (the task hands over the same facts).
        status: buyStatus3({ status, start_time, activated, forced_status, packages: by_package }, now),
        by_package: (by_package as Obj[]).map(({ budget: _budget, pricing_model, creative_ids: _creatives, ...p }) => ({ ...p, pricing_model: pricingModel3(pricing_model) })),
        ...(timeseries ? { daily_breakdown: (timeseries as Obj[]).map(({ start, impressions, spend, clicks }) => ({ date: start.slice(0, 10), impressions, spend, clicks })) } : {}),
      })),
    };
  },

  sync_creatives(r) {
    if (r.status === 'pending') return { status: 'submitted', task_id: r.task_id, message: r.message };
    return { ...r, creatives: (r.creatives as Obj[]).map(({ action, status, ...c }) => (action === 'archived' ? { ...c, action: 'deleted' } : { ...c, action, ...(action === 'failed' ? {} : { status }) })) };
  },

  list_creatives: (r) => r,

  tasks_get: taskRead3,
  // 3.1's name for tasks_get (the same read; a 3.0 caller gets it in 3.0's tasks_get shape).
  get_task_status: taskRead3,
};

/** A task read (tasks_get, get_task_status) in 3.0's shape, its history as 3.0 tells it. */
function taskRead3(r: Obj, ctx: AnswerContext): Obj {
  const { message, history, result, ...rest } = r;
  return {
    ...rest,
    protocol: 'media-buy',
    ...(message ? { message } : {}),
    // A completed task's result is the answer its task would have given synchronously.
    ...(result ? { result: answer3(r.task_type, result, ctx) } : {}),
    ...(history ? { history: (history as Obj[]).map((h) => ({ timestamp: h.at, type: 'response', data: { status: h.status, ...(h.message ? { message: h.message } : {}) } })) } : {}),
  };
}

/** A task's result as AdCP 3.0 answers it (a task without a 3.0 encoder answers as it is). */
export function answer3(task: string, result: Obj, ctx: AnswerContext): Obj {
  return Object.hasOwn(answers3, task) ? answers3[task]!(result, ctx) : result;
}

/**
 * `get_adcp_capabilities` in 3.0: 3.0.6's `compliance_testing.scenarios` enum names only the
 * force_*_status and simulate_* scenarios (list_scenarios names every one the controller runs).
 */
function capabilities3(declared: Obj): Obj {
  const testing = declared.compliance_testing as { scenarios?: unknown } | undefined;
  if (!testing || !Array.isArray(testing.scenarios)) return declared;
  return { ...declared, compliance_testing: { ...testing, scenarios: testing.scenarios.filter((s) => typeof s === 'string' && /^(force_\w+_status|simulate_\w+)$/.test(s)) } };
}

/**
 * AdCP 3.0, the release a call without `adcp_version` is answered in (everything before 3.1).
 * Only a buyer that pinned `"3.0"` is told so at the root: 3.0's schemas do not define
 * `adcp_version`, and a buyer that never sent one never reads it.
 */
export const adcp30: AnswerCodec = {
  version: '3.0',
  answer: answer3,
  capabilities: capabilities3,
  error: (task: string, request: unknown, err: AppError) => adcpErrorFor(task, request, err),
  envelope: (negotiated) => (negotiated.pinned ? { adcp_version: '3.0' } : {}),
  // 3.0's error answers carry no task status (its response schemas do not name one).
  failedEnvelope: () => ({}),
};
