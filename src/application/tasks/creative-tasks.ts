import { createHash } from 'node:crypto';
import { z } from 'zod';
import { formatKey } from '../../../projections/catalog';
import { creativeQueries } from '../../../projections/creatives';
import { mediaBuyQueries } from '../../../projections/media-buys';
import { mediaBuyDecider, mediaBuyStream } from '../../domain/media-buy/media-buy';
import type { Format } from '../../domain/catalog/catalog';
import { assetRequirements, violations } from '../../wire/adcp3/format-requirements';
import { creativeDecider, creativeStream, syncAction, type CreativeContent } from '../../domain/creative/creative';
import { AppError } from '../../shared/errors';
import { HTTP_URL_MESSAGE, isHttpUrl } from '../../shared/http-url';
import { isObject } from '../../shared/objects';
import { taskDecider, taskStream } from '../../domain/task/task';
import { newEventId } from '../../shared/ids';
import { handleCommand, loadState } from '../command-handler';
import { withIdempotency } from '../idempotency';
import { httpUrlInput, paginationInput, idempotencyKeyInput } from '../validation';
import { fieldPath } from '../../shared/field-path';
import { defineTask, recordedRelease, type TaskContext } from './context';
import { resolveAccount } from '../accounts';
import { acceptFormat } from '../formats';
import { catalogFor, formatsFor } from '../sandbox/seeds';

const dims = { width: z.number().int().positive(), height: z.number().int().positive() };
/** Asset shapes by kind; other kinds pass as given. */
const assetSchemas: Record<string, z.ZodType> = {
  video: z.object({ url: httpUrlInput, ...dims, duration_ms: z.number().int().positive() }).passthrough(),
  image: z.object({ url: httpUrlInput, ...dims }).passthrough(),
  html: z.object({ content: z.string().min(1) }).passthrough(),
};

const creativeInput = z
  .object({
    creative_id: z.string().regex(/^[\w.:-]{1,255}$/, 'must be 1-255 of A-Z a-z 0-9 _ . : -'),
    name: z.string().min(1).max(500),
    format_id: z.object({ agent_url: httpUrlInput, id: z.string().min(1) }).passthrough(),
    assets: z.record(z.string(), z.unknown()),
  })
  .passthrough();

const syncInput = z
  .object({
    creatives: z.array(z.unknown()).min(1).max(100),
    assignments: z.record(z.string(), z.array(z.string().min(1))).optional(),
    dry_run: z.boolean().optional(),
    delete_missing: z.boolean().optional(),
    idempotency_key: idempotencyKeyInput,
    account: z.unknown().optional(),
  })
  .passthrough();

interface ItemError {
  code: string;
  message: string;
  field: string;
  details?: Record<string, unknown>;
}

type Outcome = { creative_id: string; action: 'created' | 'updated' | 'unchanged' | 'archived' | 'failed'; status?: string; errors?: ItemError[]; assigned_to?: string[] };

function checkAssets(format: Format, assets: Record<string, unknown>, at: string): ItemError[] {
  const errors: ItemError[] = [];
  const failed = new Set<string>();
  for (const [kind, value] of Object.entries(assets)) {
    // Whatever its kind, an asset's `url` is where its file is fetched from and what a page links to.
    if (isObject(value) && Object.hasOwn(value, 'url') && !isHttpUrl(value.url)) {
      errors.push({ code: 'VALIDATION_ERROR', message: HTTP_URL_MESSAGE, field: `${at}.assets.${kind}.url` });
      failed.add(kind);
      continue;
    }
    // Own keys only: an asset named "constructor" or "toString" is just an unknown kind.
    if (!Object.hasOwn(assetSchemas, kind)) continue;
    const schema = assetSchemas[kind]!;
    const r = schema.safeParse(value);
    if (!r.success) {
      const issue = r.error.issues[0]!;
      errors.push({ code: 'VALIDATION_ERROR', message: issue.message, field: `${at}.assets.${kind}${issue.path.length ? `.${fieldPath(issue.path)}` : ''}` });
      failed.add(kind);
    }
  }
  for (const a of format.assets) {
    // A manifest keys an asset by the format's asset_id (older buyers by its type).
    const key = Object.hasOwn(assets, a.asset_id) ? a.asset_id : Object.hasOwn(assets, a.asset_type) ? a.asset_type : undefined;
    if (key === undefined) {
      if (a.required) errors.push({ code: 'VALIDATION_ERROR', message: `format ${format.format_id.id} requires a ${a.asset_type} asset`, field: `${at}.assets.${a.asset_type}` });
      continue;
    }
    if (failed.has(key)) continue;
    // What list_creative_formats states of this asset, and nothing else (wire/adcp3/format-requirements).
    for (const v of violations(assetRequirements(format, a), assets[key])) {
      errors.push({ code: 'VALIDATION_ERROR', message: v.message, field: `${at}.assets.${key}.${v.field}` });
    }
  }
  return errors;
}

/** The caller's live packages: package id → its product and buy. */
async function ownPackages(ctx: TaskContext): Promise<Map<string, { productId: string; mediaBuyId: string }>> {
  const buys = await mediaBuyQueries.list(ctx.ports.readModels, ctx.principal.org, { statuses: ['pending', 'active', 'paused'], limit: 10_000 });
  return new Map(buys.flatMap((b) => b.terms.packages.map((p) => [p.package_id, { productId: p.product_id, mediaBuyId: b.media_buy_id }] as const)));
}

export const syncCreatives = defineTask({
  mutating: true,
  description: 'Creates, updates or archives creatives and assigns them to packages; a per-creative action.',
  input: syncInput,
  async run(input, ctx) {
    const owner = ctx.principal.org;
    // A dry run is a preview: it is never recorded as the answer to an idempotency key.
    if (input.dry_run) return applySync(ctx, input, true);
    return withIdempotency(ctx.ports.store, owner, 'sync_creatives', input as Record<string, unknown>, async () => {
      if (ctx.ports.settings.approvalPolicy !== 'manual') return applySync(ctx, input, false);
      // Manual approval: check everything now, apply when the seller approves.
      const preview = await applySync(ctx, input, true);
      if (preview.creatives.every((c) => c.action === 'failed')) return { ...preview, dry_run: false };
      const now = ctx.ports.clock().toISOString();
      const taskId = `task_${newEventId()}`;
      const { idempotency_key: _k, ...request } = input;
      await handleCommand(ctx.ports.store, taskStream(taskId), taskDecider, {
        type: 'SubmitTask',
        taskId,
        taskType: 'sync_creatives',
        owner,
        resourceId: owner,
        request,
        ...recordedRelease(ctx),
        ...(ctx.a2a ? { a2a: ctx.a2a } : {}),
        message: 'Creatives awaiting seller approval',
        now,
      }, { now, principal: ctx.principal.keyId, correlationId: ctx.requestId });
      return { status: 'pending', task_id: taskId, message: 'Creatives awaiting seller approval; poll tasks_get or wait for the webhook', creatives: preview.creatives, dry_run: false };
    });
  },
});

/** The sync itself; `dryRun` computes every outcome and writes nothing. */
export async function applySync(ctx: TaskContext, input: z.infer<typeof syncInput>, dryRun: boolean): Promise<{ creatives: Outcome[]; dry_run: boolean }> {
  const owner = ctx.principal.org;
  input = { ...input, dry_run: dryRun };
  const now = ctx.ports.clock().toISOString();
  const cmdCtx = { now, principal: ctx.principal.keyId, correlationId: ctx.requestId };
  const account = input.account !== undefined ? await resolveAccount(ctx, input.account) : undefined;
  const catalog = await catalogFor(ctx, account);
  const formats = await formatsFor(ctx, account);
  const products = new Map(catalog.products.map((p) => [p.product_id, p]));
  const packages = input.assignments ? await ownPackages(ctx) : new Map<string, { productId: string; mediaBuyId: string }>();
  const outcomes: Outcome[] = [];
  const seen = new Set<string>();

  for (const [i, rawCreative] of input.creatives.entries()) {
    const at = `creatives[${i}]`;
    const parsed = creativeInput.safeParse(rawCreative);
    const id = (rawCreative as { creative_id?: unknown })?.creative_id;
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      outcomes.push({ creative_id: typeof id === 'string' ? id : `#${i}`, action: 'failed', errors: [{ code: 'VALIDATION_ERROR', message: issue.message, field: `${at}.${fieldPath(issue.path)}` }] });
      continue;
    }
    const c = parsed.data;
    seen.add(c.creative_id);
    // The rule build_creative and preview_creative apply too (placeholder agents in a sandbox only).
    const taken = acceptFormat(formats, c.format_id, ctx.origin, account?.sandbox === true);
    const format = 'format' in taken ? taken.format : undefined;
    const errors: ItemError[] =
      'format' in taken
        ? checkAssets(taken.format, c.assets, at)
        : [{ code: 'VALIDATION_ERROR', message: taken.refusal.message, field: `${at}.format_id`, details: { accepted_values: taken.refusal.accepted_values } }];
    // Own keys only: a creative_id such as "constructor" must not find Object.prototype's.
    const assigned = input.assignments && Object.hasOwn(input.assignments, c.creative_id) ? input.assignments[c.creative_id] : undefined;
    for (const [j, packageId] of (assigned ?? []).entries()) {
      const productId = packages.get(packageId)?.productId;
      const field = `assignments.${c.creative_id}[${j}]`;
      if (!productId) errors.push({ code: 'NOT_FOUND', message: `unknown package_id ${packageId}`, field });
      else if (format && !products.get(productId)?.format_ids.some((f) => formatKey(f) === formatKey(format.format_id))) {
        errors.push({ code: 'UNSUPPORTED_FEATURE', message: `product ${productId} does not accept format ${c.format_id.id}`, field });
      }
    }
    if (errors.length > 0 || !format) {
      outcomes.push({ creative_id: c.creative_id, action: 'failed', errors });
      continue;
    }
    const stream = creativeStream(owner, c.creative_id);
    const { state } = await loadState(ctx.ports.store, stream, creativeDecider);
    const assignedTo = assigned ?? (state.status === 'none' ? [] : [...state.content.assigned_to]);
    const before = state.status === 'none' ? {} : (state.content.assigned_at ?? {});
    const content: CreativeContent = {
      creative_id: c.creative_id,
      owner,
      name: c.name,
      format_id: { agent_url: c.format_id.agent_url, id: c.format_id.id },
      format_type: format.type,
      assets: c.assets,
      // Assignments named in this sync replace the old ones; otherwise they stay.
      assigned_to: assignedTo,
      assigned_at: Object.fromEntries(assignedTo.map((pkg) => [pkg, Object.hasOwn(before, pkg) ? before[pkg]! : now])),
      // Live or sandbox is decided when a creative is first synced: a later sync under a sandbox
      // account must not open a live creative to the compliance controller.
      ...((state.status === 'none' ? account?.sandbox : state.content.sandbox) ? { sandbox: true } : {}),
    };
    const hash = createHash('sha256').update(JSON.stringify(content)).digest('hex');
    const action = syncAction(state, hash);
    if (!input.dry_run && action !== 'unchanged') {
      await handleCommand(ctx.ports.store, stream, creativeDecider, { type: 'SyncCreative', content, hash, now }, cmdCtx);
      // The buys whose packages gained or lost this creative record it too (their status reads it).
      const previous = state.status === 'none' ? [] : state.content.assigned_to;
      const buys = new Set([...previous, ...assignedTo].map((pkg) => packages.get(pkg)?.mediaBuyId).filter((b): b is string => b !== undefined));
      for (const buyId of buys) {
        await handleCommand(ctx.ports.store, mediaBuyStream(buyId), mediaBuyDecider, { type: 'AssignCreative', creativeId: c.creative_id, packageIds: assignedTo, now }, cmdCtx);
      }
    }
    outcomes.push({ creative_id: c.creative_id, action, status: 'approved', assigned_to: [...content.assigned_to] });
  }

  if (input.delete_missing) {
    for (const id of await creativeQueries.activeIds(ctx.ports.readModels, owner)) {
      if (seen.has(id)) continue;
      if (!input.dry_run) await handleCommand(ctx.ports.store, creativeStream(owner, id), creativeDecider, { type: 'ArchiveCreative', now }, cmdCtx);
      outcomes.push({ creative_id: id, action: 'archived', status: 'archived' });
    }
  }
  return { creatives: outcomes, dry_run: input.dry_run === true };
}

export { syncInput };

const listInput = z
  .object({
    filters: z
      .object({
        status: z.array(z.string()).optional(),
        // AdCP 3.0's names for the same filter, and a filter by id.
        statuses: z.array(z.string()).optional(),
        format_types: z.array(z.string()).optional(),
        creative_ids: z.array(z.string().min(1)).max(100).optional(),
      })
      .passthrough()
      .optional(),
    limit: z.number().int().min(1).max(100).optional(),
    cursor: z.string().optional(),
    pagination: paginationInput.optional(),
  })
  .passthrough();

export const listCreatives = defineTask({
  description: 'The buyer\'s creative library with filters, a cursor and a summary.',
  input: listInput,
  async run(input, ctx) {
    const cursor = input.cursor ?? input.pagination?.cursor;
    if (cursor && !/^[\w.:-]{1,255}$/.test(cursor)) throw new AppError('VALIDATION_ERROR', 'cursor is not one this agent issued', input.cursor ? 'cursor' : 'pagination.cursor');
    const limit = input.limit ?? input.pagination?.max_results ?? 50;
    const f = { statuses: input.filters?.status ?? input.filters?.statuses, formatTypes: input.filters?.format_types, creativeIds: input.filters?.creative_ids };
    const all = await creativeQueries.list(ctx.ports.readModels, ctx.principal.org, f);
    const start = cursor ? all.findIndex((r) => r.creative_id > cursor) : 0;
    const page = start < 0 ? [] : all.slice(start, start + limit);
    const hasMore = start >= 0 && start + limit < all.length;
    const byStatus: Record<string, number> = {};
    for (const r of all) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
    return {
      query_summary: { total_matching: all.length, returned: page.length, filters_applied: Object.keys(input.filters ?? {}) },
      summary: { by_status: byStatus },
      pagination: { has_more: hasMore, ...(hasMore ? { cursor: page[page.length - 1]!.creative_id } : {}) },
      creatives: page.map((r) => {
        const d = JSON.parse(r.doc) as CreativeContent;
        return {
          creative_id: d.creative_id,
          name: d.name,
          format_id: d.format_id,
          status: r.status,
          assets: d.assets,
          assignments: {
            assignment_count: d.assigned_to.length,
            // Creatives synced before assignment dates were recorded show their last update.
            assigned_packages: d.assigned_to.map((package_id) => ({ package_id, assigned_date: d.assigned_at?.[package_id] ?? r.updated_at })),
          },
          created_date: r.created_at,
          updated_date: r.updated_at,
        };
      }),
    };
  },
});
