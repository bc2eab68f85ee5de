import DataLoader from 'dataloader';
import { Arg, Ctx, FieldResolver, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { listCreatives, type CreativeRow } from '../../application/creative-reads';
import { CREATIVE_STATUSES, type CreativeContent } from '../../domain/creative/creative';
import { AppError, type ErrorCode } from '../../shared/errors';
import { newEventId } from '../../shared/ids';
import { hasUnstorableText } from '../../shared/nul';
import { principalOf } from '../buys/buy.resolver';
import { checkFirst, decodeCursor, encodeCursor, MAX_PAGE } from '../pages';
import { MediaBuy } from '../buys/buy.type';
import type { GraphQLContext } from '../context';
import { runTask } from '../tasks';
import { CreativeAssignmentInput, CreativeInput } from './creative.input';
import { Creative, CreativeConnection, CreativeSyncResult, type CreativeAsset } from './creative.type';

/** Creative ids as sync_creatives accepts them (also what a connection cursor must decode to). */
const CREATIVE_ID = /^[\w.:-]{1,255}$/;

type Key = { owner: string; id: string };

// Per request, like the buys' loaders: a page of buys asking for their creatives makes one query per owner.
const perRequest = new WeakMap<GraphQLContext, DataLoader<Key, CreativeRow | undefined, string>>();

function creativeLoader(ctx: GraphQLContext): DataLoader<Key, CreativeRow | undefined, string> {
  let loader = perRequest.get(ctx);
  if (!loader) {
    loader = new DataLoader<Key, CreativeRow | undefined, string>(
      async (keys) => {
        const byOwner = new Map<string, string[]>();
        for (const k of keys) byOwner.set(k.owner, [...(byOwner.get(k.owner) ?? []), k.id]);
        const found = new Map<string, CreativeRow>();
        for (const [owner, ids] of byOwner) {
          for (const row of await listCreatives(ctx.app.ports, owner, { creativeIds: ids, statuses: [...CREATIVE_STATUSES] })) found.set(JSON.stringify([owner, row.creative_id]), row);
        }
        return keys.map((k) => found.get(JSON.stringify([k.owner, k.id])));
      },
      { cacheKeyFn: (k) => JSON.stringify([k.owner, k.id]) },
    );
    perRequest.set(ctx, loader);
  }
  return loader;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? Math.round(v) : null);

export function toCreative(row: CreativeRow): Creative {
  const doc = JSON.parse(row.doc) as CreativeContent;
  const assets: CreativeAsset[] = Object.entries(doc.assets).map(([kind, value]) => {
    const a = (value !== null && typeof value === 'object' ? value : {}) as Record<string, unknown>;
    return { kind, url: typeof a.url === 'string' ? a.url : null, width: num(a.width), height: num(a.height), durationMs: num(a.duration_ms) };
  });
  return {
    id: row.creative_id,
    name: row.name,
    format: { agentUrl: doc.format_id.agent_url, id: doc.format_id.id },
    formatType: row.format_type,
    status: row.status,
    assets,
    url: assets.find((a) => a.url !== null)?.url ?? null,
    // Creatives synced before assignment dates were recorded show their last update.
    assignments: doc.assigned_to.map((packageId) => ({ packageId, assignedAt: doc.assigned_at?.[packageId] ?? row.updated_at })),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** Strings that reach a read-model query as parameters: PostgreSQL cannot compare NUL or lone surrogates. */
function storable(values: readonly string[], field: string): void {
  const bad = values.findIndex((v) => hasUnstorableText(v));
  if (bad >= 0) throw new AppError('VALIDATION_ERROR', 'contains U+0000 or an unpaired surrogate', `${field}[${bad}]`);
}

/** A sync item's field (the task's spelling, camelCased or not) as CreativeInput names it. */
function syncInputField(field: string, packageIds: readonly string[]): string | undefined {
  const assignment = /^assignments\.[^[]+\[(\d+)\]/.exec(field);
  if (assignment) return packageIds.length ? `packageIds[${assignment[1]}]` : 'packageIds';
  const m = /^creatives\[0\]\.(creative_id|creativeId|name|format_id|formatId|assets)(.*)$/.exec(field);
  if (!m) return undefined;
  if (m[1] === 'creative_id' || m[1] === 'creativeId') return 'creativeId';
  if (m[1] === 'name') return 'name';
  if (m[1] === 'format_id' || m[1] === 'formatId') return 'formatId';
  return /duration_?ms/i.test(m[2]!) ? 'durationMs' : 'assetUrl';
}

type SyncOutcome = { creative_id: string; action: string; errors?: { code: string; message: string; field: string }[] };

/** Runs sync_creatives; a thrown error or a failed item becomes an AppError at the field `place` names. */
async function sync(ctx: GraphQLContext, request: Record<string, unknown>, place: (field: string) => string | undefined): Promise<{ outcomes: SyncOutcome[]; taskId: string | null }> {
  let result: Record<string, unknown>;
  try {
    result = await runTask(ctx, 'sync_creatives', request);
  } catch (err) {
    if (err instanceof AppError && err.field) throw new AppError(err.code, err.message, place(err.field), err.details);
    throw err;
  }
  const outcomes = (result.creatives ?? []) as SyncOutcome[];
  const failed = outcomes.find((o) => o.action === 'failed');
  const error = failed?.errors?.[0];
  if (error) {
    const field = place(error.field);
    throw new AppError(error.code as ErrorCode, field ? `${field}: ${error.message}` : error.message, field);
  }
  return { outcomes, taskId: typeof result.task_id === 'string' ? result.task_id : null };
}

/** The buyer's creatives as a typed graph: their library, what a buy shows, syncing and assigning. */
@Resolver(() => Creative)
export class CreativeResolver {
  @Query(() => CreativeConnection, { description: 'Your creative library, a page at a time by id (a cursor connection); archived ones only when statuses asks for them. Buyer key.' })
  async creativesConnection(
    @Ctx() ctx: GraphQLContext,
    @Arg('first', () => Int, { defaultValue: 20, description: `Creatives per page, 1 to ${MAX_PAGE}.` }) first: number,
    @Arg('after', () => String, { nullable: true, description: 'The endCursor of the page before.' }) after?: string | null,
    @Arg('statuses', () => [String], { nullable: true, description: 'Only these statuses (default: all but archived).' }) statuses?: string[] | null,
  ): Promise<CreativeConnection> {
    const principal = principalOf(ctx);
    checkFirst(first);
    const bad = (statuses ?? []).findIndex((s) => !(CREATIVE_STATUSES as readonly string[]).includes(s));
    if (bad >= 0) throw new AppError('VALIDATION_ERROR', `statuses may hold ${CREATIVE_STATUSES.join(', ')}`, `statuses[${bad}]`);
    const from = after ? decodeCursor(after, (id) => CREATIVE_ID.test(id)) : undefined;
    const rows = await listCreatives(ctx.app.ports, principal.org, { ...(statuses?.length ? { statuses } : {}), ...(from ? { after: from } : {}), limit: first + 1 });
    const loader = creativeLoader(ctx);
    const page = rows.slice(0, first);
    for (const row of page) loader.prime({ owner: principal.org, id: row.creative_id }, row);
    const edges = page.map((row) => ({ cursor: encodeCursor(row.creative_id), node: toCreative(row) }));
    return { edges, pageInfo: { hasNextPage: rows.length > first, endCursor: edges.at(-1)?.cursor ?? null } };
  }

  @Mutation(() => CreativeSyncResult, { description: 'Creates or updates one creative from a hosted file (sync_creatives), optionally assigned to packages. Errors name the input field (`assetUrl`, `formatId`, `packageIds[0]`, …). Buyer key required.' })
  async syncCreative(@Ctx() ctx: GraphQLContext, @Arg('input', () => CreativeInput) input: CreativeInput): Promise<CreativeSyncResult> {
    const principal = principalOf(ctx);
    const creativeId = input.creativeId ?? `cr_${newEventId()}`;
    const packageIds = input.packageIds ?? [];
    if (packageIds.length > 100) throw new AppError('VALIDATION_ERROR', 'at most 100 packages', 'packageIds');
    // The file's size is the format's: the form names a format and a URL, not pixels.
    const formats = ((await runTask(ctx, 'list_creative_formats', {})).formats ?? []) as { format_id: { agent_url?: string; id: string }; type: string; dimensions?: { width: number; height: number } }[];
    const format = formats.find((f) => f.format_id.id === input.formatId.id && (f.format_id.agent_url ?? '') === input.formatId.agentUrl) ?? formats.find((f) => f.format_id.id === input.formatId.id);
    const kind = format?.type === 'video' ? 'video' : 'image';
    const asset = { url: input.assetUrl, ...(format?.dimensions ?? {}), ...(kind === 'video' && input.durationMs !== null && input.durationMs !== undefined ? { duration_ms: input.durationMs } : {}) };
    const request = {
      creatives: [{ creative_id: creativeId, name: input.name, format_id: { agent_url: input.formatId.agentUrl, id: input.formatId.id }, assets: { [kind]: asset } }],
      ...(input.packageIds ? { assignments: { [creativeId]: packageIds } } : {}),
    };
    const { outcomes, taskId } = await sync(ctx, request, (field) => syncInputField(field, packageIds));
    if (taskId) return { action: 'pending', creative: null, taskId };
    const [row] = await listCreatives(ctx.app.ports, principal.org, { creativeIds: [creativeId], statuses: [...CREATIVE_STATUSES] });
    if (!row) throw new AppError('UNAVAILABLE', 'the creative was synced but cannot be read back yet; list it with creativesConnection');
    return { action: outcomes[0]?.action ?? 'unchanged', creative: toCreative(row), taskId: null };
  }

  @Mutation(() => [Creative], { description: 'Assigns creatives of your library to packages of your live buys (adds to their assignments, or replaces them). Errors name `creativeIds[i]` or `packageIds[j]`. Buyer key required.' })
  async assignCreatives(@Ctx() ctx: GraphQLContext, @Arg('input', () => CreativeAssignmentInput) input: CreativeAssignmentInput): Promise<Creative[]> {
    const principal = principalOf(ctx);
    if (input.creativeIds.length < 1 || input.creativeIds.length > 100) throw new AppError('VALIDATION_ERROR', 'name 1 to 100 creatives', 'creativeIds');
    if (input.packageIds.length > 100 || (input.packageIds.length === 0 && !input.replace)) throw new AppError('VALIDATION_ERROR', 'name 1 to 100 packages (none only with replace, to unassign)', 'packageIds');
    storable(input.creativeIds, 'creativeIds');
    storable(input.packageIds, 'packageIds');
    const rows = await listCreatives(ctx.app.ports, principal.org, { creativeIds: input.creativeIds });
    const byId = new Map(rows.map((r) => [r.creative_id, r]));
    const missing = input.creativeIds.findIndex((id) => !byId.has(id));
    if (missing >= 0) throw new AppError('CREATIVE_NOT_FOUND', `no creative ${input.creativeIds[missing]} in your library`, `creativeIds[${missing}]`);
    const ids = [...new Set(input.creativeIds)];
    const docs = ids.map((id) => JSON.parse(byId.get(id)!.doc) as CreativeContent);
    const request = {
      creatives: docs.map((d) => ({ creative_id: d.creative_id, name: d.name, format_id: d.format_id, assets: d.assets })),
      assignments: Object.fromEntries(docs.map((d) => [d.creative_id, input.replace ? [...new Set(input.packageIds)] : [...new Set([...d.assigned_to, ...input.packageIds])]])),
    };
    await sync(ctx, request, (field) => {
      const a = /^assignments\.([^[]+)\[(\d+)\]/.exec(field);
      if (a) {
        const pkg = request.assignments[a[1]!]?.[Number(a[2])];
        const at = pkg === undefined ? -1 : input.packageIds.indexOf(pkg);
        return at >= 0 ? `packageIds[${at}]` : 'packageIds';
      }
      const c = /^creatives\[(\d+)\]/.exec(field);
      return c ? `creativeIds[${input.creativeIds.indexOf(ids[Number(c[1])]!)}]` : undefined;
    });
    const after = new Map((await listCreatives(ctx.app.ports, principal.org, { creativeIds: ids, statuses: [...CREATIVE_STATUSES] })).map((r) => [r.creative_id, r]));
    return ids.flatMap((id) => (after.has(id) ? [toCreative(after.get(id)!)] : []));
  }
}

/** The creatives assigned to a buy's packages. */
@Resolver(() => MediaBuy)
export class BuyCreativesResolver {
  @FieldResolver(() => [Creative], { description: 'The creatives assigned to its packages (batched across buys).' })
  async creatives(@Root() buy: MediaBuy, @Ctx() ctx: GraphQLContext, @Arg('first', () => Int, { defaultValue: 20, description: `At most this many, 1 to ${MAX_PAGE}.` }) first: number): Promise<Creative[]> {
    checkFirst(first);
    const ids = [...new Set(buy.packages.flatMap((p) => p.creativeIds))].slice(0, first);
    const rows = await creativeLoader(ctx).loadMany(ids.map((id) => ({ owner: buy.owner, id })));
    return rows.flatMap((r) => (r && !(r instanceof Error) ? [toCreative(r)] : []));
  }
}
