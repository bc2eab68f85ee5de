import { hash } from 'node:crypto';
import { z } from 'zod';
import { catalogQueries } from '../../../projections/catalog';
import { mediaBuyQueries, type MediaBuyRow } from '../../../projections/media-buys';
import { webhookQueries, type WebhookActivityRow } from '../../../projections/webhooks';
import { impairmentQueries } from '../../../projections/impairments';
import type { Impairment } from '../../domain/impairment/impairment';
import { assertDeliverableUrl } from '../../shared/url-guard';
import { isAuction, type Product } from '../../domain/catalog/catalog';
import type { MediaBuyState } from '../../domain/media-buy/media-buy';
import { checkMeasurementTerms, DEFAULT_MEASUREMENT, type MeasurementPolicy } from '../../domain/catalog/measurement';
import { mediaBuyDecider, mediaBuyStream, type MediaBuyEvent, type MediaBuyTerms, type PackageTerms } from '../../domain/media-buy/media-buy';
import { taskDecider, taskStream } from '../../domain/task/task';
import { newEventId, ownerScopedId, publicId } from '../../shared/ids';
import { AppError, failureMessage } from '../../shared/errors';
import { handleCommand, loadState, startStream } from '../command-handler';
import { ConcurrencyError, type StoredEvent } from '../../eventstore/port';
import { withIdempotency } from '../idempotency';
import { resolveBuyId, storedBuyIds } from '../buy-ids';
import { brandManifestSchema } from './catalog-tasks';
import { resolveAccount } from '../accounts';
import { consultGovernance, withGovernanceRelease } from '../governance/consult';
import { takeCreateArm } from '../sandbox/directives';
import { catalogFor, productFor } from '../sandbox/seeds';
import { recordSyncCompletion } from './sync-completion';
import { packagesFromProposal } from './proposals';
import { buyerCatalogQueries } from '../../../projections/buyer-catalogs';
import { paginationInput, idempotencyKeyInput } from '../validation';
import { defineTask, recordedRelease, type TaskContext } from './context';

const isoDate = z.string().refine((s) => !Number.isNaN(Date.parse(s)), { message: 'must be an ISO 8601 date-time' });

export const pushNotificationConfigSchema = z
  .object({
    url: z.string().url(),
    operation_id: z.string().regex(/^[A-Za-z0-9_.:-]{1,255}$/, 'must be 1-255 of A-Z a-z 0-9 _ . : -'),
    // Echoed verbatim in every AdCP 3.1 webhook (3.0's webhooks never carried it).
    token: z.string().min(16).max(4096).optional(),
    authentication: z
      .object({ schemes: z.array(z.enum(['Bearer', 'HMAC-SHA256'])).length(1), credentials: z.string().min(32, 'must be at least 32 characters') })
      .optional(),
  })
  .passthrough();

/** AdCP `reporting_webhook`: where and how often delivery reports go (daily unless told). */
export const reportingWebhookSchema = z
  .object({
    url: z.string().url(),
    reporting_frequency: z.enum(['hourly', 'daily', 'monthly']).default('daily'),
    authentication: z
      .object({ schemes: z.array(z.enum(['Bearer', 'HMAC-SHA256'])).length(1), credentials: z.string().min(32, 'must be at least 32 characters') })
      .optional(),
  })
  .passthrough();

const packageInput = z
  .object({
    buyer_ref: z.string().min(1).max(255).optional(),
    product_id: z.string().min(1),
    pricing_option_id: z.string().min(1),
    budget: z.number().positive(),
    bid_price: z.number().nonnegative().optional(),
    targeting_overlay: z.record(z.string(), z.unknown()).optional(),
    creative_ids: z.array(z.string().min(1)).optional(),
    creatives: z.array(z.record(z.string(), z.unknown())).optional(),
    measurement_terms: z.record(z.string(), z.unknown()).optional(),
    catalogs: z.array(z.object({ catalog_id: z.string().min(1).max(255), type: z.string().min(1).max(64).optional() }).passthrough()).min(1).max(10).optional(),
  })
  .passthrough();

const createInput = z
  .object({
    buyer_ref: z.string().min(1).max(255),
    brand_manifest: brandManifestSchema,
    packages: z.array(packageInput).min(1).optional().describe('Required, unless proposal_id and total_budget accept a proposal from get_products instead.'),
    // AdCP 3.0: accept a proposal from get_products instead of listing packages.
    proposal_id: z.string().min(1).max(255).optional(),
    plan_id: z.string().min(1).max(255).optional().describe('The buyer\'s governance plan this buy is committed under (required when the account has a governance agent and it holds more than one plan for the brand).'),
    governance_context: z.string().min(1).max(4096).regex(/^[\x20-\x7E]+$/, 'must be printable ASCII').optional(),
    total_budget: z.object({ amount: z.number().positive(), currency: z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code') }).optional(),
    // The spec's object form, and AdCP v3's "asap" | date-time.
    start_time: z.union([
      z.object({ type: z.literal('asap') }).passthrough(),
      z.object({ type: z.literal('scheduled'), datetime: isoDate }).passthrough(),
      z.literal('asap'),
      isoDate,
    ]),
    end_time: isoDate,
    push_notification_config: pushNotificationConfigSchema.optional(),
    reporting_webhook: reportingWebhookSchema.optional(),
    idempotency_key: idempotencyKeyInput,
    context: z.record(z.string(), z.unknown()).optional(),
    account: z.unknown().optional(),
  })
  .passthrough()
  .superRefine((r, ctx) => {
    if (r.proposal_id === undefined && !r.packages) ctx.addIssue({ code: 'custom', path: ['packages'], message: 'is required (or proposal_id with total_budget, to accept a proposal)' });
    if (r.proposal_id !== undefined && r.packages) ctx.addIssue({ code: 'custom', path: ['packages'], message: 'must not be given with proposal_id: the proposal\'s allocations are the packages' });
    if (r.proposal_id !== undefined && !r.total_budget) ctx.addIssue({ code: 'custom', path: ['total_budget'], message: 'is required with proposal_id: the proposal splits it across its products' });
  });

/**
 * Callback registrations are checked before anything is recorded: the URL must be deliverable
 * (https, public address; ALLOW_PRIVATE_WEBHOOK_URLS=1 lifts that for tests), and the legacy
 * Bearer scheme is refused: these tasks mutate state, and a replayable static token is no proof
 * of who sent their callbacks (spec §5: sellers should refuse it for mutating callbacks).
 */
async function assertCallbacks(
  ctx: TaskContext,
  callbacks: { push_notification_config?: { url: string; authentication?: { schemes: string[] } }; reporting_webhook?: { url: string } },
  prefix = '',
): Promise<void> {
  const allowPrivate = ctx.ports.settings.allowPrivateWebhookUrls;
  const push = callbacks.push_notification_config;
  if (push) {
    if (push.authentication?.schemes[0] === 'Bearer') {
      throw new AppError(
        'VALIDATION_ERROR',
        'Bearer authentication is refused for callbacks of state-changing tasks; omit authentication (RFC 9421 signatures) or use HMAC-SHA256',
        `${prefix}push_notification_config.authentication.schemes[0]`,
      );
    }
    await assertDeliverableUrl(push.url, `${prefix}push_notification_config.url`, allowPrivate);
  }
  if (callbacks.reporting_webhook) await assertDeliverableUrl(callbacks.reporting_webhook.url, `${prefix}reporting_webhook.url`, allowPrivate);
}

/** Opaque, stable per (buyer, buyer_ref): a second create with the same buyer_ref hits the same stream. */
function mediaBuyIdFor(owner: string, buyerRef: string): string {
  return `mb_${hash('sha256', `${owner}\u0000${buyerRef}`, 'base64url').slice(0, 22)}`;
}

function resolvePackage(p: z.infer<typeof packageInput>, i: number, product: Product | undefined, mediaBuyId: string): PackageTerms {
  if (!product) throw new AppError('PRODUCT_NOT_FOUND', `unknown product_id ${p.product_id}`, `packages[${i}].product_id`);
  const option = product.pricing_options.find((o) => o.pricing_option_id === p.pricing_option_id);
  if (!option) {
    throw new AppError('VALIDATION_ERROR', `product ${product.product_id} has no pricing option ${p.pricing_option_id}`, `packages[${i}].pricing_option_id`, {
      accepted_values: product.pricing_options.map((o) => o.pricing_option_id),
    });
  }
  checkMeasurementTerms((product as { measurement?: MeasurementPolicy }).measurement ?? DEFAULT_MEASUREMENT, p.measurement_terms, `packages[${i}].measurement_terms`);
  let rate = option.price ?? 0;
  if (isAuction(option)) {
    if (p.bid_price === undefined) throw new AppError('INVALID_REQUEST', 'bid_price is required for auction pricing', `packages[${i}].bid_price`);
    if (p.bid_price < (option.floor ?? 0)) {
      throw new AppError('VALIDATION_ERROR', `bid_price ${p.bid_price} is below the floor ${option.floor}`, `packages[${i}].bid_price`, { floor: option.floor });
    }
    rate = p.bid_price;
  }
  return {
    package_id: `pkg_${mediaBuyId.slice(3, 15)}_${i + 1}`,
    ...(p.buyer_ref ? { buyer_ref: p.buyer_ref } : {}),
    product_id: product.product_id,
    pricing_option_id: option.pricing_option_id,
    pricing_model: option.pricing_model,
    rate,
    currency: option.currency,
    budget: p.budget,
    ...(p.bid_price !== undefined ? { bid_price: p.bid_price } : {}),
    ...(p.targeting_overlay ? { targeting_overlay: p.targeting_overlay } : {}),
    ...(p.measurement_terms ? { measurement_terms: p.measurement_terms } : {}),
    ...(p.catalogs ? { catalogs: p.catalogs.map((c) => ({ catalog_id: c.catalog_id, ...(c.type ? { type: c.type } : {}) })) } : {}),
    creative_ids: p.creative_ids ?? [],
  };
}

/** A package's catalogs must be ones the buyer synced to the buy's account. */
async function assertCatalogs(ctx: TaskContext, account: { account_id: string } | undefined, packages: readonly object[]): Promise<void> {
  const named = packages.flatMap((p, i) => ((p as { catalogs?: { catalog_id: string }[] }).catalogs ?? []).map((c, j) => ({ id: c.catalog_id, field: `packages[${i}].catalogs[${j}].catalog_id` })));
  if (named.length === 0) return;
  if (!account) throw new AppError('INVALID_REQUEST', 'catalogs belong to an account: name the account', named[0]!.field);
  const synced = new Set((await buyerCatalogQueries.list(ctx.ports.readModels, ctx.principal.org, account.account_id)).map((c) => c.catalog_id));
  const missing = named.find((n) => !synced.has(n.id));
  if (missing) throw new AppError('NOT_FOUND', `no catalog ${missing.id} on this account: sync it with sync_catalogs first`, missing.field, { resource: 'catalog' });
}

/**
 * What a buy's AdCP 3.0 status is computed from besides its terms and domain status (see
 * mediaBuyStatus3 in src/wire/adcp3/answers.ts), as the media-buys read model keeps them too:
 * every view that a 3.0 answer is made from carries them, so each answer tells the same status.
 */
export function lifecycleFacts(buy: { activated?: boolean; forcedStatus?: string }): { activated?: true; forced_status?: string } {
  return { ...(buy.activated ? { activated: true as const } : {}), ...(buy.forcedStatus ? { forced_status: buy.forcedStatus } : {}) };
}

/** The spec-binding view of one media buy (REST and GraphQL share it). */
export function mediaBuyView(terms: MediaBuyTerms, status: string, extra: Record<string, unknown> = {}) {
  return {
    media_buy_id: publicId(terms.media_buy_id),
    buyer_ref: terms.buyer_ref,
    status,
    currency: terms.currency,
    total_budget: terms.total_budget,
    start_time: terms.start_time,
    end_time: terms.end_time,
    packages: terms.packages.map((p) => ({
      package_id: p.package_id,
      ...(p.buyer_ref ? { buyer_ref: p.buyer_ref } : {}),
      product_id: p.product_id,
      pricing_option_id: p.pricing_option_id,
      budget: p.budget,
      ...(p.bid_price !== undefined ? { bid_price: p.bid_price } : {}),
      ...(p.targeting_overlay ? { targeting_overlay: p.targeting_overlay } : {}),
      ...(p.measurement_terms ? { measurement_terms: p.measurement_terms } : {}),
      ...(p.catalogs ? { catalogs: p.catalogs } : {}),
      creative_ids: p.creative_ids,
      ...(p.paused ? { paused: true } : {}),
      ...(p.canceled ? { canceled: true } : {}),
    })),
    ...extra,
  };
}

async function needsApproval(ctx: TaskContext, products: Product[], total: number): Promise<boolean> {
  switch (ctx.ports.settings.approvalPolicy) {
    case 'manual':
      return true;
    case 'never':
      return false;
    case 'rules': {
      const { budget_threshold } = await ctx.ports.cache.get('catalog:approval', () => catalogQueries.approval(ctx.ports.readModels));
      return products.some((p) => p.requires_approval) || (budget_threshold !== undefined && total >= budget_threshold);
    }
  }
}

export const createMediaBuy = defineTask({
  mutating: true,
  description: 'Creates a media buy; status pending with a task_id when the seller must approve.',
  input: createInput,
  async run(input, ctx) {
    const owner = ctx.principal.org;
    return withIdempotency(ctx.ports.store, owner, 'create_media_buy', input as Record<string, unknown>, async (attempt) => {
      await assertCallbacks(ctx, input);
      const account = input.account !== undefined ? await resolveAccount(ctx, input.account) : undefined;
      const now = ctx.ports.clock();
      const mediaBuyId = mediaBuyIdFor(owner, input.buyer_ref);
      // The flight first: a request with impossible dates is refused whatever it buys.
      const { start, end, asap } = flightOf(input.start_time, input.end_time, now);
      // The buyer's governance agent has the first word: a commitment its plan refuses is refused
      // whatever the inventory. It is asked for what the request commits (budget, flight); if the
      // buy then fails here, the agent is told so and releases the budget.
      const requestedTotal = input.packages ? Math.round(input.packages.reduce((s, p) => s + p.budget, 0) * 100) / 100 : input.total_budget!.amount;
      const governance = account
        ? await consultGovernance(ctx, account.account_id, { plan_id: input.plan_id, governance_context: input.governance_context, tool: 'create_media_buy', phase: 'purchase' }, {
            total_budget: requestedTotal,
            ...(input.total_budget ? { currency: input.total_budget.currency } : {}),
            start_time: start,
            end_time: end,
          })
        : undefined;
      return withGovernanceRelease(ctx, governance, async () => {
        const requested =
          input.packages ?? (await packagesFromProposal(ctx, input.proposal_id!, input.total_budget!, (await catalogFor(ctx, account)).products));
        // Every package is checked before anything is appended: one bad package appends nothing.
        const products = await Promise.all(requested.map((p) => productFor(ctx, account, p.product_id)));
        await assertCatalogs(ctx, account, requested);
        const packages = requested.map((p, i) => resolvePackage(p, i, products[i], mediaBuyId));
        const currency = packages[0]!.currency;
        const mixed = packages.findIndex((p) => p.currency !== currency);
        if (mixed >= 0) throw new AppError('VALIDATION_ERROR', `all packages must be priced in ${currency}`, `packages[${mixed}].pricing_option_id`);

        const total = Math.round(packages.reduce((s, p) => s + p.budget, 0) * 100) / 100;
        const terms: MediaBuyTerms = {
          media_buy_id: mediaBuyId,
          owner,
          buyer_ref: input.buyer_ref,
          ...(account ? { account_id: account.account_id, ...(account.sandbox ? { sandbox: true } : {}) } : {}),
          ...(ctx.wire === 'adcp3' ? { wire: 'adcp3' as const } : {}),
          brand_manifest: input.brand_manifest as Record<string, unknown>,
          packages,
          ...(input.proposal_id !== undefined ? { proposal_id: input.proposal_id } : {}),
          start_time: start,
          // Waiting for approval, an "asap" start moves to the approval (the decider does it).
          ...(asap ? { start_asap: true } : {}),
          end_time: end,
          currency,
          total_budget: total,
          ...(input.push_notification_config ? { push_notification_config: input.push_notification_config } : {}),
          ...(input.reporting_webhook ? { reporting_webhook: input.reporting_webhook } : {}),
          ...(governance ? { governance: governance.verdict } : {}),
        };
        const cmdCtx = { now: now.toISOString(), principal: ctx.principal.keyId, correlationId: ctx.requestId, idempotency: attempt };
        // A sandbox account may have forced this create onto the submitted path (compliance tests).
        const arm = account?.sandbox ? await takeCreateArm(ctx, now.toISOString()) : undefined;
        const approval = arm !== undefined || (await needsApproval(ctx, products as Product[], total));
        const taskId = arm ? ownerScopedId(owner, arm.task_id) : approval ? `task_${newEventId()}` : undefined;
        if (taskId) {
          // Fail fast on a taken buyer_ref before recording a task for it (the append below is
          // what enforces uniqueness).
          const [existing] = await ctx.ports.store.readStream(mediaBuyStream(mediaBuyId), { limit: 1 });
          const earlier = answerOfAttempt(existing, attempt);
          if (earlier) return earlier;
          if (existing) throw new AppError('CONFLICT', `buyer_ref ${input.buyer_ref} is already used by media buy ${mediaBuyId}`, 'buyer_ref');
          // The task first: a buy never points at a task that was not recorded.
          await handleCommand(ctx.ports.store, taskStream(taskId), taskDecider, {
            type: 'SubmitTask',
            taskId,
            taskType: 'create_media_buy',
            owner,
            resourceId: mediaBuyId,
            pushNotificationConfig: input.push_notification_config,
            context: input.context,
            ...(arm ? { awaitsController: true } : {}),
            ...(ctx.wire === 'adcp3' ? { wire: 'adcp3' as const } : {}),
            ...recordedRelease(ctx),
            ...(ctx.a2a ? { a2a: ctx.a2a } : {}),
            message: arm?.message ?? 'Media buy awaiting seller approval',
            now: cmdCtx.now,
          }, cmdCtx);
        }
        let recovered: Record<string, unknown> | undefined;
        try {
          await startStream(ctx.ports.store, mediaBuyStream(mediaBuyId), mediaBuyDecider, { type: 'CreateMediaBuy', terms, needsApproval: approval, taskId, now: cmdCtx.now }, cmdCtx).catch(async (err: unknown) => {
            if (!(err instanceof ConcurrencyError)) throw err;
            // Taken: by this very request's earlier attempt (answer as it would have), or by another.
            recovered = answerOfAttempt((await ctx.ports.store.readStream(mediaBuyStream(mediaBuyId), { limit: 1 }))[0], attempt);
            if (!recovered) throw new AppError('CONFLICT', `buyer_ref ${input.buyer_ref} is already used by media buy ${mediaBuyId}`, 'buyer_ref');
          });
        } catch (err) {
          if (taskId) {
            await handleCommand(ctx.ports.store, taskStream(taskId), taskDecider, { type: 'ChangeTaskStatus', status: 'failed', message: failureMessage(err), actor: 'system', now: cmdCtx.now }, cmdCtx).catch(() => {});
          }
          throw err;
        }
        if (recovered) {
          // This attempt's task is not needed: the earlier attempt's buy (and task) stand.
          if (taskId) await handleCommand(ctx.ports.store, taskStream(taskId), taskDecider, { type: 'ChangeTaskStatus', status: 'failed', message: 'superseded by an earlier attempt with the same idempotency_key', actor: 'system', now: cmdCtx.now }, cmdCtx).catch(() => {});
          return recovered;
        }
        const view = createdView(terms, approval ? 'pending' : 'active', cmdCtx.now, taskId);
        // AdCP 3.0 buyers who registered a webhook hear of a synchronous completion too.
        if (!approval && ctx.wire === 'adcp3' && input.push_notification_config) {
          await recordSyncCompletion(ctx, { taskType: 'create_media_buy', resourceId: mediaBuyId, pushNotificationConfig: input.push_notification_config, context: input.context, result: view, now: cmdCtx.now });
        }
        return view;
      });
    });
  },
});

/** How far in the past a start may lie and still be taken as "now" (clock skew, slow clients). */
const START_SKEW_MS = 5 * 60_000;

/**
 * The flight a create asks for. Reversed dates are refused; a start more than a few minutes in
 * the past is refused (INVALID_REQUEST: AdCP lets a seller reject or adjust, and a buy cannot
 * deliver in the past), a slightly late one starts now; a flight that has ended is refused.
 */
function flightOf(st: z.infer<typeof createInput>['start_time'], endTime: string, now: Date): { start: string; end: string; asap: boolean } {
  const asap = st === 'asap' || (typeof st === 'object' && st.type === 'asap');
  let start = asap ? now.getTime() : Date.parse(typeof st === 'string' ? st : (st as { datetime: string }).datetime);
  const end = Date.parse(endTime);
  if (end <= start) throw new AppError('VALIDATION_ERROR', 'end_time must be after the start time', 'end_time');
  if (start < now.getTime() - START_SKEW_MS) throw new AppError('INVALID_REQUEST', 'start_time is in the past; use "asap" or a future date-time', 'start_time');
  start = Math.max(start, now.getTime());
  if (end <= start) throw new AppError('VALIDATION_ERROR', 'end_time is in the past', 'end_time');
  return { start: new Date(start).toISOString(), end: new Date(end).toISOString(), asap };
}

/** create_media_buy's answer for a buy as created (pending with its task, or active: confirmed at `at`, its creation). */
function createdView(terms: MediaBuyTerms, status: string, at: string, taskId?: string) {
  return status === 'pending'
    ? mediaBuyView(terms, 'pending', { revision: 1, task_id: taskId && publicId(taskId), message: 'Media buy awaiting seller approval; poll tasks_get or wait for the webhook' })
    : mediaBuyView(terms, 'active', { revision: 1, confirmed_at: at });
}

/**
 * The answer an earlier attempt of this same request (same idempotency_key and payload) gave or
 * would have given, if it created the buy (`first`, the buy stream's first event) but failed
 * before recording its response.
 */
function answerOfAttempt(first: StoredEvent | undefined, attempt: string | undefined): Record<string, unknown> | undefined {
  if (!attempt || first?.type !== 'MediaBuyCreated' || first.metadata.idempotency !== attempt) return undefined;
  const { status, task_id, at, ...terms } = first.data as MediaBuyTerms & { status: string; task_id?: string; at: string };
  return createdView(terms as MediaBuyTerms, status, at, task_id);
}

const getMediaBuysInput = z
  .object({
    media_buy_ids: z.array(z.string().min(1)).max(100).optional(),
    media_buy_id: z.string().min(1).optional(),
    status_filter: z.union([z.string(), z.array(z.string())]).optional(),
    include_webhook_activity: z.boolean().optional(),
    webhook_activity_limit: z.number().int().min(1).max(200).optional(),
    pagination: paginationInput.optional(),
  })
  .passthrough();

/** One AdCP webhook-activity record per attempt (the queued next attempt shows as `pending`). */
function activityRecord(a: WebhookActivityRow) {
  return {
    idempotency_key: a.idempotency_key,
    ...(a.notification_type !== 'task_status' ? { notification_type: a.notification_type } : {}),
    ...(a.task_id ? { task_id: publicId(a.task_id) } : {}),
    ...(a.sequence_number !== null ? { sequence_number: Number(a.sequence_number) } : {}),
    fired_at: a.fired_at,
    completed_at: a.completed_at,
    attempt: Number(a.attempt),
    status: a.status,
    url: a.url,
    http_status_code: a.http_status_code === null ? null : Number(a.http_status_code),
    response_time_ms: a.response_time_ms === null ? null : Number(a.response_time_ms),
    payload_size_bytes: Number(a.payload_size_bytes),
    error_message: a.error_message,
  };
}

function rowView(r: MediaBuyRow, impairments: Impairment[], activity?: WebhookActivityRow[]) {
  return mediaBuyView(r.terms, r.status, {
    revision: Number(r.revision),
    created_at: r.created_at,
    updated_at: r.updated_at,
    // When the seller confirmed it (creation, or the approval later); absent while it waits or if rejected.
    ...(r.confirmed_at ? { confirmed_at: r.confirmed_at } : {}),
    health: impairments.length > 0 ? 'impaired' : 'ok',
    impairments: impairments.map(({ owner: _owner, media_buy_id: _buy, ...i }) => i),
    ...(r.task_id ? { task_id: publicId(r.task_id) } : {}),
    ...(r.forced_status ? { forced_status: r.forced_status } : {}),
    ...(Number(r.activated) ? { activated: true } : {}),
    ...(activity ? { webhook_activity: activity.map(activityRecord) } : {}),
  });
}

export const getMediaBuys = defineTask({
  description: 'The caller\'s media buys with packages, status and impairments.',
  input: getMediaBuysInput,
  async run(input, ctx) {
    // A fixture id names the caller's own seeded buy (kept under the caller: see buy-ids.ts).
    const ids = (input.media_buy_ids ?? (input.media_buy_id ? [input.media_buy_id] : undefined))?.flatMap((id) => storedBuyIds(ctx.principal.org, id));
    const limit = input.pagination?.max_results ?? 50;
    const statuses = typeof input.status_filter === 'string' ? [input.status_filter] : input.status_filter;
    const after = input.pagination?.cursor;
    let rows: MediaBuyRow[];
    let impairmentsOf: (id: string) => Impairment[];
    if (ids?.length) {
      // By id (how buyers poll): served from the per-buy cache, filtered and ordered as the SQL would.
      const buys = await ctx.ports.mediaBuyCache.get(ctx.ports.readModels, ctx.principal.org, ids);
      rows = [...buys.values()]
        .map((b) => b.row)
        .filter((r) => (!statuses?.length || statuses.includes(r.status)) && (after === undefined || r.media_buy_id > after))
        .sort((a, b) => (a.media_buy_id < b.media_buy_id ? -1 : a.media_buy_id > b.media_buy_id ? 1 : 0))
        .slice(0, limit + 1);
      impairmentsOf = (id) => buys.get(id)!.impairments;
    } else {
      rows = await mediaBuyQueries.list(ctx.ports.readModels, ctx.principal.org, { statuses, limit: limit + 1, after });
      const open = await impairmentQueries.openFor(ctx.ports.readModels, ctx.principal.org, rows.slice(0, limit).map((r) => r.media_buy_id));
      impairmentsOf = (id) => open.filter((i) => i.media_buy_id === id);
    }
    // `media_buy_ids` is a filter (AdCP): ids that are unknown or another buyer's list nothing, alike,
    // however many are given. The spec's singular `media_buy_id` names one buy: 404 when it is not yours.
    if (input.media_buy_ids === undefined && input.media_buy_id !== undefined && rows.length === 0) throw new AppError('MEDIA_BUY_NOT_FOUND', 'no media buy of yours has this media_buy_id', 'media_buy_id');
    const page = rows.slice(0, limit);
    const activityLimit = input.webhook_activity_limit ?? 50;
    const activity = input.include_webhook_activity
      ? await webhookQueries.activityForBuys(ctx.ports.readModels, ctx.principal.org, page.map((r) => r.media_buy_id), activityLimit)
      : undefined;
    return {
      media_buys: page.map((r) => rowView(r, impairmentsOf(r.media_buy_id), activity?.filter((a) => a.media_buy_id === r.media_buy_id).slice(0, activityLimit))),
      pagination: { has_more: rows.length > limit, ...(rows.length > limit ? { cursor: page[page.length - 1]!.media_buy_id } : {}) },
    };
  },
});

const packageUpdate = z
  .object({
    package_id: z.string().min(1),
    budget: z.number().positive().optional(),
    bid_price: z.number().nonnegative().optional(),
    targeting_overlay: z.record(z.string(), z.unknown()).optional(),
    creative_ids: z.array(z.string().min(1)).optional(),
    paused: z.boolean().optional(),
    canceled: z.boolean().optional(),
  })
  .passthrough();

const updateInput = z
  .object({
    media_buy_id: z.string().min(1),
    updates: z
      .object({
        budget_change: z.number().optional(),
        end_time: isoDate.optional(),
        // The spec's verbs, and the resulting statuses as some clients send them.
        status: z.enum(['pause', 'resume', 'cancel', 'paused', 'active', 'canceled']).optional(),
        reason: z.string().max(500).optional(),
        targeting: z.record(z.string(), z.unknown()).optional(),
        packages: z.array(packageUpdate).optional(),
        push_notification_config: pushNotificationConfigSchema.optional(),
        reporting_webhook: reportingWebhookSchema.optional(),
      })
      .passthrough(),
    idempotency_key: idempotencyKeyInput,
  })
  .passthrough();

const STATUS_VERB = { pause: 'pause', paused: 'pause', resume: 'resume', active: 'resume', cancel: 'cancel', canceled: 'cancel' } as const;

export const updateMediaBuy = defineTask({
  mutating: true,
  description: 'Changes budget, dates, status (pause, resume, cancel), targeting, packages or callbacks.',
  input: updateInput,
  async run(input, ctx) {
    const owner = ctx.principal.org;
    return withIdempotency(ctx.ports.store, owner, 'update_media_buy', input as Record<string, unknown>, async (attempt) => {
      // Ownership from the stream itself (not the projection): another buyer's id is simply absent.
      const mediaBuyId = await resolveBuyId(ctx.ports.store, owner, input.media_buy_id);
      const { state, history } = await loadState(ctx.ports.store, mediaBuyStream(mediaBuyId), mediaBuyDecider);
      if (state.status === 'none' || state.terms.owner !== owner) throw new AppError('MEDIA_BUY_NOT_FOUND', 'no media buy of yours has this media_buy_id', 'media_buy_id');
      // An earlier attempt of this request applied the update but did not record its answer:
      // answer from the buy as that attempt left it, rather than applying a budget change twice.
      let applied = -1;
      if (attempt) history.forEach((e, i) => e.metadata.idempotency === attempt && (applied = i));
      if (applied >= 0) {
        const upTo = history.slice(0, applied + 1) as unknown as MediaBuyEvent[];
        const then = upTo.reduce((st, e) => mediaBuyDecider.evolve(st, e), mediaBuyDecider.initialState()) as Exclude<typeof state, { status: 'none' }>;
        const mine = history.filter((e) => e.metadata.idempotency === attempt) as unknown as MediaBuyEvent[];
        return mediaBuyView(then.terms, then.status, { revision: then.revision, changed: changedBy(mine), ...lifecycleFacts(then) });
      }
      const u = input.updates;
      await assertCallbacks(ctx, u, 'updates.');
      const now = ctx.ports.clock().toISOString();
      const command = {
        type: 'UpdateMediaBuy' as const,
        changes: {
          budget_change: u.budget_change,
          end_time: u.end_time,
          targeting: u.targeting,
          packages: u.packages,
          push_notification_config: u.push_notification_config,
          reporting_webhook: u.reporting_webhook,
        },
        status: u.status ? STATUS_VERB[u.status] : undefined,
        reason: u.reason,
        now,
      };
      // A governed buy that would commit more (budget up, flight longer) asks its governance agent
      // again, as the same action (its governance_context), for the total it would then commit.
      const governed = state.terms.governance;
      let consulted: Awaited<ReturnType<typeof consultGovernance>>;
      if (governed && state.terms.account_id) {
        const next = mediaBuyDecider.decide(command, state).reduce<MediaBuyState>((st, e) => mediaBuyDecider.evolve(st, e), state);
        if (next.status !== 'none' && (next.terms.total_budget > state.terms.total_budget || Date.parse(next.terms.end_time) > Date.parse(state.terms.end_time))) {
          consulted = await consultGovernance(
            ctx,
            state.terms.account_id,
            { plan_id: governed.plan_id, governance_context: governed.governance_context, tool: 'update_media_buy', phase: 'modification' },
            { total_budget: next.terms.total_budget, currency: next.terms.currency, start_time: next.terms.start_time, end_time: next.terms.end_time },
          );
        }
      }
      const { state: after, events } = await withGovernanceRelease(ctx, consulted, () =>
        handleCommand(ctx.ports.store, mediaBuyStream(mediaBuyId), mediaBuyDecider, command, { now, principal: ctx.principal.keyId, correlationId: ctx.requestId, idempotency: attempt }),
      );
      const buy = after as Exclude<typeof after, { status: 'none' }>;
      return mediaBuyView(buy.terms, buy.status, { revision: buy.revision, changed: changedBy(events), ...lifecycleFacts(buy) });
    });
  },
});

/** The fields an update's events changed, as update_media_buy reports them. */
function changedBy(events: readonly MediaBuyEvent[]): string[] {
  return events.flatMap((e) => (e.type === 'MediaBuyUpdated' ? [...e.data.changed] : e.type === 'MediaBuyStatusChanged' ? ['status'] : []));
}
