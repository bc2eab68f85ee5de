import { z } from 'zod';
import { catalogQueries } from '../../../projections/catalog';
import { isAuction, type Plan, type Product } from '../../domain/catalog/catalog';
import { applyAsk, normalized } from '../../domain/proposal/refine-ask';
import { isHeld, proposalDecider, proposalStream, type Allocation, type ProposalState } from '../../domain/proposal/proposal';
import { AppError } from '../../shared/errors';
import { handleCommand, loadState } from '../command-handler';
import type { TaskContext } from './context';

/**
 * Proposals as get_products offers them (brief mode), refines them (refine mode) and as
 * create_media_buy accepts them (`proposal_id` + `total_budget` instead of `packages`).
 * The plans are the catalog's; each buyer's refinements and holds are its own (domain/proposal).
 */

export const refineEntry = z.discriminatedUnion('scope', [
  z.object({ scope: z.literal('request'), ask: z.string().min(1).max(2000) }).strict(),
  z.object({ scope: z.literal('product'), product_id: z.string().min(1), action: z.enum(['include', 'omit', 'more_like_this']).default('include'), ask: z.string().min(1).max(2000).optional() }).strict(),
  z.object({ scope: z.literal('proposal'), proposal_id: z.string().min(1), action: z.enum(['include', 'omit', 'finalize']).default('include'), ask: z.string().min(1).max(2000).optional() }).strict(),
]);
export type RefineEntry = z.infer<typeof refineEntry>;

type Obj = Record<string, unknown>;
type Outcome = { status: 'applied' | 'partial' | 'unable'; notes?: string };

const stateOf = async (ctx: TaskContext, planId: string): Promise<ProposalState> =>
  (await loadState(ctx.ports.store, proposalStream(ctx.principal.org, planId), proposalDecider)).state;

/**
 * A plan's allocations for this buyer, on the products its request can see: its own refined
 * allocations while they still name such products, else the plan filled afresh. Each slot takes
 * the product it prefers if visible, else the first visible product of its channel not already
 * in the plan; slots left empty are dropped and the rest re-scaled to 100 %. Undefined when no
 * slot can be filled: the plan is not offered.
 */
function allocationsFor(plan: Plan, state: ProposalState, visible: readonly Product[]): { allocations: Allocation[]; own: boolean } | undefined {
  const byId = new Map(visible.map((p) => [p.product_id, p]));
  const sellable = (a: Allocation) => byId.get(a.product_id)?.pricing_options.some((o) => o.pricing_option_id === a.pricing_option_id);
  if (state.allocations?.every(sellable)) return { allocations: [...state.allocations], own: true };
  const used = new Set<string>();
  const filled: Allocation[] = [];
  for (const slot of plan.allocations) {
    const preferred = slot.product_id !== undefined && !used.has(slot.product_id) ? byId.get(slot.product_id) : undefined;
    const product = preferred ?? visible.find((p) => p.channels.includes(slot.channel) && !used.has(p.product_id));
    if (!product) continue;
    used.add(product.product_id);
    const option = (preferred && slot.pricing_option_id !== undefined ? product.pricing_options.find((o) => o.pricing_option_id === slot.pricing_option_id) : undefined) ?? product.pricing_options[0]!;
    // The plan's rationale speaks of the product it prefers; another product gets a plain one.
    const rationale = slot.product_id === undefined || preferred ? slot.rationale : `the plan's ${slot.channel} share`;
    filled.push({ product_id: product.product_id, pricing_option_id: option.pricing_option_id, allocation_percentage: slot.allocation_percentage, ...(rationale ? { rationale } : {}) });
  }
  return filled.length ? { allocations: normalized(filled), own: false } : undefined;
}

/** The plan as this buyer sees it: its allocations, and the hold while it stands. */
function proposalView(plan: Plan, mine: { allocations: readonly Allocation[]; own: boolean }, state: ProposalState, now: string, briefAlignment?: string): Obj {
  const { allocations: _slots, ...rest } = plan;
  return {
    ...rest,
    allocations: mine.allocations,
    ...(mine.own && isHeld(state, now) ? { proposal_status: 'committed', expires_at: state.expiresAt } : {}),
    ...(briefAlignment ? { brief_alignment: briefAlignment } : {}),
  };
}

/**
 * Brief mode: every plan that can be filled from the visible products, the plans whose products
 * the brief matched best first (`relevance` by product id, from the ranking of the products).
 */
export async function proposalsForBrief(ctx: TaskContext, visible: readonly Product[], relevance: ReadonlyMap<string, { score: number; terms: string[] }>): Promise<Obj[]> {
  const plans = await catalogQueries.plans(ctx.ports.readModels);
  const now = ctx.ports.clock().toISOString();
  const offered = await Promise.all(
    plans.map(async (plan, order) => {
      const state = await stateOf(ctx, plan.proposal_id);
      const mine = allocationsFor(plan, state, visible);
      if (!mine) return undefined;
      const { allocations } = mine;
      const score = allocations.reduce((s, a) => s + (a.allocation_percentage / 100) * (relevance.get(a.product_id)?.score ?? 0), 0);
      const terms = [...new Set(allocations.flatMap((a) => relevance.get(a.product_id)?.terms ?? []))];
      return { view: proposalView(plan, mine, state, now, terms.length ? `its products match ${terms.join(', ')}` : undefined), order, score };
    }),
  );
  return offered
    .filter((o) => o !== undefined)
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .map((o) => o.view);
}

/** Products similar to one: those sharing a channel with it, catalog order, at most three. */
function similarTo(product: Product, visible: readonly Product[]): Product[] {
  return visible.filter((p) => p.product_id !== product.product_id && p.channels.some((c) => product.channels.includes(c))).slice(0, 3);
}

const joined = (parts: string[]) => parts.join('; ');

/**
 * Refine mode: the entries are answered one by one, in order (`refinement_applied` matches them
 * by position). Proposal asks and finalizing are recorded per buyer; request-level asks apply to
 * every proposal this answer returns that is not being finalized by it.
 */
export async function refine(ctx: TaskContext, entries: readonly RefineEntry[], visible: readonly Product[]): Promise<{ productIds: string[]; proposals: Obj[]; refinement_applied: Obj[] }> {
  const byId = new Map(visible.map((p) => [p.product_id, p]));
  const plans = new Map((await catalogQueries.plans(ctx.ports.readModels)).map((pl) => [pl.proposal_id, pl]));
  const channelsOf = (id: string) => byId.get(id)?.channels ?? [];
  const now = ctx.ports.clock().toISOString();
  const productIds: string[] = [];
  const omittedProducts = new Set<string>();
  const work = new Map<string, { plan: Plan; state: ProposalState; start: Allocation[]; allocations: Allocation[]; asks: string[]; finalize: boolean; omitted: boolean }>();
  const outcomes: (Outcome | undefined)[] = [];
  for (const e of entries) {
    if (e.scope === 'product') {
      const product = byId.get(e.product_id);
      if (!product) {
        outcomes.push({ status: 'unable', notes: `no product ${e.product_id} is offered to this request` });
      } else if (e.action === 'omit') {
        omittedProducts.add(product.product_id);
        outcomes.push({ status: 'applied', notes: `${product.product_id} left out` });
      } else if (e.action === 'more_like_this') {
        const similar = similarTo(product, visible).filter((p) => !omittedProducts.has(p.product_id));
        productIds.push(product.product_id, ...similar.map((p) => p.product_id));
        outcomes.push(similar.length ? { status: 'applied', notes: `added ${similar.map((p) => p.product_id).join(', ')} (same channels)` } : { status: 'unable', notes: 'no other product shares its channels' });
      } else {
        productIds.push(product.product_id);
        // A product's terms are the catalog's: an ask to change them is answered, not applied.
        outcomes.push(e.ask ? { status: 'partial', notes: 'returned as published: this seller does not change a product\'s terms on request' } : { status: 'applied' });
      }
      continue;
    }
    if (e.scope === 'proposal') {
      const plan = plans.get(e.proposal_id);
      let w = plan && work.get(plan.proposal_id);
      if (plan && !w) {
        const state = await stateOf(ctx, plan.proposal_id);
        const mine = allocationsFor(plan, state, visible);
        if (mine) {
          w = { plan, state, start: mine.allocations, allocations: mine.allocations, asks: [], finalize: false, omitted: false };
          work.set(plan.proposal_id, w);
        }
      }
      if (!w) {
        outcomes.push({ status: 'unable', notes: `no proposal ${e.proposal_id} is offered to this request` });
        continue;
      }
      if (e.action === 'omit') {
        w.omitted = true;
        outcomes.push({ status: 'applied', notes: `${w.plan.proposal_id} left out` });
      } else if (e.action === 'finalize') {
        w.finalize = true;
        outcomes.push(undefined); // answered once the hold is recorded
      } else if (e.ask) {
        const r = applyAsk(w.allocations, e.ask, channelsOf);
        w.allocations = r.allocations;
        if (r.applied.length) w.asks.push(e.ask);
        outcomes.push({ status: r.unable.length === 0 ? 'applied' : r.applied.length ? 'partial' : 'unable', notes: joined([...r.applied, ...r.unable]) });
      } else {
        outcomes.push({ status: 'applied' });
      }
      continue;
    }
    outcomes.push(undefined); // request-level: below, once the proposals it applies to are known
  }
  // Request-level asks, on every proposal returned and not being finalized.
  const open = [...work.values()].filter((w) => !w.omitted && !w.finalize);
  entries.forEach((e, i) => {
    if (e.scope !== 'request') return;
    if (open.length === 0) {
      outcomes[i] = { status: 'unable', notes: 'no proposal in this request to apply it to (name one with scope "proposal")' };
      return;
    }
    const results = open.map((w) => {
      const r = applyAsk(w.allocations, e.ask, channelsOf);
      w.allocations = r.allocations;
      if (r.applied.length) w.asks.push(e.ask);
      return r;
    });
    const applied = results.flatMap((r) => r.applied);
    const unable = [...new Set(results.flatMap((r) => r.unable))];
    outcomes[i] = { status: unable.length === 0 ? 'applied' : applied.length ? 'partial' : 'unable', notes: joined([...applied, ...unable]) };
  });
  // Record what changed, one command per proposal; finalizing commits the plan as refined.
  const cmdCtx = { now, principal: ctx.principal.keyId, correlationId: ctx.requestId };
  const proposals: Obj[] = [];
  for (const w of work.values()) {
    const changed = JSON.stringify(w.allocations) !== JSON.stringify(w.start);
    const base = { proposalId: w.plan.proposal_id, owner: ctx.principal.org, allocations: w.allocations, now };
    let state = w.state;
    let own = JSON.stringify(state.allocations) === JSON.stringify(w.start);
    if (w.finalize) {
      if (changed) state = (await handleCommand(ctx.ports.store, proposalStream(ctx.principal.org, w.plan.proposal_id), proposalDecider, { type: 'RefineProposal', ...base, asks: w.asks }, cmdCtx)).state;
      state = (await handleCommand(ctx.ports.store, proposalStream(ctx.principal.org, w.plan.proposal_id), proposalDecider, { type: 'FinalizeProposal', ...base }, cmdCtx)).state;
      entries.forEach((e, i) => {
        if (e.scope === 'proposal' && e.proposal_id === w.plan.proposal_id && e.action === 'finalize') outcomes[i] = { status: 'applied', notes: `committed: pricing firm and inventory held until ${state.expiresAt}` };
      });
      own = true;
    } else if (changed) {
      state = (await handleCommand(ctx.ports.store, proposalStream(ctx.principal.org, w.plan.proposal_id), proposalDecider, { type: 'RefineProposal', ...base, asks: w.asks }, cmdCtx)).state;
      own = true;
    }
    if (!w.omitted) {
      proposals.push(proposalView(w.plan, { allocations: w.allocations, own }, state, now));
      productIds.push(...w.allocations.map((a) => a.product_id));
    }
  }
  const refinement_applied = entries.map((e, i) => {
    const o = outcomes[i] ?? { status: 'unable' as const };
    const id = e.scope === 'product' ? { product_id: e.product_id } : e.scope === 'proposal' ? { proposal_id: e.proposal_id } : {};
    return { scope: e.scope, ...id, status: o.status, ...(o.notes ? { notes: o.notes } : {}) };
  });
  return { productIds: [...new Set(productIds)].filter((id) => !omittedProducts.has(id)), proposals, refinement_applied };
}

/**
 * create_media_buy by accepting a proposal: one package per allocation, its budget that share of
 * `total_budget` (to the cent; the last takes the rounding), auction lines bid at the floor.
 */
export async function packagesFromProposal(
  ctx: TaskContext,
  proposalId: string,
  total: { amount: number; currency: string },
  visible: readonly Product[],
): Promise<{ product_id: string; pricing_option_id: string; budget: number; bid_price?: number }[]> {
  const plan = (await catalogQueries.plans(ctx.ports.readModels)).find((pl) => pl.proposal_id === proposalId);
  const state = plan && (await stateOf(ctx, proposalId));
  const mine = plan && allocationsFor(plan, state!, visible);
  if (!mine) throw new AppError('NOT_FOUND', `no proposal ${proposalId} is offered to this account: get_products offers the current ones`, 'proposal_id', { resource: 'proposal' });
  const now = ctx.ports.clock().toISOString();
  const { allocations } = mine;
  if (mine.own && state!.expiresAt !== undefined && !isHeld(state!, now)) {
    throw new AppError('PROPOSAL_EXPIRED', `proposal ${proposalId}'s hold lapsed at ${state!.expiresAt}: finalize it again (get_products, buying_mode refine) before buying`, 'proposal_id');
  }
  const byId = new Map(visible.map((p) => [p.product_id, p]));
  const options = allocations.map((a) => {
    const option = byId.get(a.product_id)!.pricing_options.find((o) => o.pricing_option_id === a.pricing_option_id)!;
    if (option.currency !== total.currency) {
      throw new AppError('VALIDATION_ERROR', `proposal ${proposalId} is priced in ${option.currency}`, 'total_budget.currency', { accepted_values: [option.currency] });
    }
    return option;
  });
  let left = Math.round(total.amount * 100);
  return allocations.map((a, i) => {
    const cents = i === allocations.length - 1 ? left : Math.round(total.amount * a.allocation_percentage);
    left -= cents;
    if (cents <= 0) throw new AppError('VALIDATION_ERROR', `total_budget ${total.amount} leaves nothing for ${a.product_id} (${a.allocation_percentage}%)`, 'total_budget.amount');
    const option = options[i]!;
    return { product_id: a.product_id, pricing_option_id: a.pricing_option_id, budget: cents / 100, ...(isAuction(option) ? { bid_price: option.floor ?? 0 } : {}) };
  });
}
