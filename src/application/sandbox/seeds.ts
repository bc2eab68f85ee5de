import { createHash } from 'node:crypto';
import { catalogQueries, formatKey } from '../../../projections/catalog';
import { sandboxCatalogQueries } from '../../../projections/sandbox-catalog';
import type { Format, PricingOption, Product } from '../../domain/catalog/catalog';
import { AppError } from '../../shared/errors';
import type { CommandContext } from '../command-handler';
import type { ResolvedAccount } from '../accounts';
import type { TaskContext } from '../tasks/context';
import { ControllerError, requireString } from './errors';

/** The seed scenarios this seller honours (fixtures for a sandbox account's tests). */
export const SEED_SCENARIOS = ['seed_product', 'seed_pricing_option', 'seed_creative_format'] as const;

/** Where formats a fixture names without an agent come from: the standard creative agent. */
const DEFAULT_FORMAT_AGENT = 'https://creative.adcontextprotocol.org';

/** 3.0 names back to the catalog's (the reverse of the 3.0 answer codec). */
const CHANNEL: Readonly<Record<string, string>> = { olv: 'video' };
const PRICING_MODEL: Readonly<Record<string, string>> = { flat_rate: 'flat-fee' };

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

const seedStream = (owner: string) => `sandbox-catalog-${createHash('sha256').update(owner).digest('base64url').slice(0, 22)}`;

function fixtureOf(params: Obj): Obj {
  const f = params.fixture ?? {};
  if (!isObj(f)) throw new ControllerError('INVALID_PARAMS', 'params.fixture must be an object');
  for (const k of Object.keys(f)) if (FORBIDDEN_KEYS.has(k)) throw new ControllerError('INVALID_PARAMS', `params.fixture.${k} is a reserved key`);
  return f;
}

/** A 3.0 pricing option (fixed_price / floor_price) as the catalog keeps it (price / floor). */
function pricingOptionOf(productId: string, optionId: string, f: Obj): PricingOption {
  const model = typeof f.pricing_model === 'string' ? f.pricing_model : 'cpm';
  const price = typeof f.fixed_price === 'number' ? f.fixed_price : typeof f.price === 'number' ? f.price : undefined;
  const floor = typeof f.floor_price === 'number' ? f.floor_price : undefined;
  if (price === undefined && floor === undefined) throw new ControllerError('INVALID_PARAMS', `pricing option ${optionId} of ${productId} needs fixed_price or floor_price`);
  const currency = typeof f.currency === 'string' && /^[A-Z]{3}$/.test(f.currency) ? f.currency : 'USD';
  return {
    pricing_option_id: optionId,
    pricing_model: price === undefined && model === 'cpm' ? 'cpm-auction' : (PRICING_MODEL[model] ?? model),
    ...(price !== undefined ? { price } : { floor }),
    currency,
    ...(typeof f.min_spend_per_package === 'number' ? { min_spend_per_package: f.min_spend_per_package } : {}),
  } as PricingOption;
}

/**
 * Every product and format a request sees: the operator's catalog, and for a sandbox account
 * also its buyer's seeded fixtures (`sandboxOwner`), which shadow catalog entries of the same id.
 */
export async function catalogFor(ctx: TaskContext, sandboxOwner: string | undefined): Promise<{ products: Product[]; formats: Format[] }> {
  const [products, formats] = await Promise.all([catalogQueries.products(ctx.app.readModels), catalogQueries.formats(ctx.app.readModels)]);
  if (!sandboxOwner) return { products, formats };
  const [seededProducts, seededFormats] = await Promise.all([sandboxCatalogQueries.products(ctx.app.readModels, sandboxOwner), sandboxCatalogQueries.formats(ctx.app.readModels, sandboxOwner)]);
  const seededIds = new Set(seededProducts.map((p) => p.product_id));
  const seededKeys = new Set(seededFormats.map((f) => formatKey(f.format_id)));
  return {
    products: [...seededProducts, ...products.filter((p) => !seededIds.has(p.product_id))],
    formats: [...formats.filter((f) => !seededKeys.has(formatKey(f.format_id))), ...seededFormats],
  };
}

/** One product as a request sees it (see catalogFor). */
export async function productFor(ctx: TaskContext, sandboxOwner: string | undefined, productId: string): Promise<Product | undefined> {
  if (sandboxOwner) {
    const seeded = await sandboxCatalogQueries.product(ctx.app.readModels, sandboxOwner, productId);
    if (seeded) return seeded;
  }
  return ctx.app.cache.get(`catalog:product:${productId}`, () => catalogQueries.product(ctx.app.readModels, productId));
}

export async function seedScenario(ctx: TaskContext, account: ResolvedAccount, scenario: string, params: Obj, cmd: CommandContext): Promise<Obj> {
  const fixture = fixtureOf(params);
  const owner = ctx.principal.org;
  void account;
  const { products, formats } = await catalogFor(ctx, owner);
  const events: { type: string; data: Obj }[] = [];
  const agentFor = (id: string) => formats.find((f) => f.format_id.id === id)?.format_id.agent_url ?? DEFAULT_FORMAT_AGENT;
  /** A format the fixture names that this account cannot resolve yet becomes a sandbox format. */
  const ensureFormat = (fid: { agent_url: string; id: string }, type: string) => {
    if (formats.some((f) => formatKey(f.format_id) === formatKey(fid))) return;
    const format = { format_id: fid, name: fid.id, type, requirements: {}, assets: [] } as unknown as Format;
    formats.push(format);
    events.push({ type: 'SandboxFormatSeeded', data: { owner, format } });
  };
  let message: string;
  switch (scenario) {
    case 'seed_product': {
      const productId = requireString(params, 'product_id');
      const existing = products.find((p) => p.product_id === productId);
      const channels = Array.isArray(fixture.channels) ? fixture.channels.filter((c): c is string => typeof c === 'string').map((c) => CHANNEL[c] ?? c) : (existing?.channels ?? ['display']);
      const type = channels.includes('video') || channels.includes('ctv') ? 'video' : 'display';
      const formatIds = Array.isArray(fixture.format_ids)
        ? fixture.format_ids.map((f, i) => {
            if (!isObj(f) || typeof f.id !== 'string' || !/^[A-Za-z0-9_-]+$/.test(f.id)) throw new ControllerError('INVALID_PARAMS', `params.fixture.format_ids[${i}].id must be a format id`);
            return { agent_url: typeof f.agent_url === 'string' ? f.agent_url : agentFor(f.id), id: f.id };
          })
        : (existing?.format_ids ?? [{ agent_url: DEFAULT_FORMAT_AGENT, id: type === 'video' ? 'video_30s' : 'display_300x250' }]);
      formatIds.forEach((f) => ensureFormat(f, type));
      const pricing = Array.isArray(fixture.pricing_options)
        ? fixture.pricing_options.map((o, i) => {
            if (!isObj(o) || typeof o.pricing_option_id !== 'string') throw new ControllerError('INVALID_PARAMS', `params.fixture.pricing_options[${i}].pricing_option_id is required`);
            return pricingOptionOf(productId, o.pricing_option_id, o);
          })
        : (existing?.pricing_options ?? []);
      const deliveryType = fixture.delivery_type === 'guaranteed' || fixture.delivery_type === 'non_guaranteed' ? fixture.delivery_type : (existing?.delivery_type ?? 'non_guaranteed');
      const product = {
        ...existing,
        product_id: productId,
        name: typeof fixture.name === 'string' ? fixture.name : (existing?.name ?? productId),
        description: typeof fixture.description === 'string' ? fixture.description : (existing?.description ?? `Sandbox fixture ${productId}`),
        publisher_domains: existing?.publisher_domains ?? [(await catalogQueries.properties(ctx.app.readModels))[0]?.publisher_domain ?? 'sandbox.example'],
        channels,
        delivery_type: deliveryType,
        format_ids: formatIds,
        targeting: existing?.targeting ?? {},
        pricing_options: pricing,
        delivery: existing?.delivery ?? { daily_impression_capacity: 1_000_000, ctr: 0.002 },
        requires_approval: typeof fixture.requires_approval === 'boolean' ? fixture.requires_approval : (existing?.requires_approval ?? false),
      } as Product;
      events.push({ type: 'SandboxProductSeeded', data: { owner, product } });
      message = `product ${productId} seeded`;
      break;
    }
    case 'seed_pricing_option': {
      const productId = requireString(params, 'product_id');
      const optionId = requireString(params, 'pricing_option_id');
      const product = products.find((p) => p.product_id === productId);
      if (!product) throw new ControllerError('NOT_FOUND', `no product ${productId}: seed it first`);
      const option = pricingOptionOf(productId, optionId, fixture);
      const pricing_options = [...product.pricing_options.filter((o) => o.pricing_option_id !== optionId), option];
      events.push({ type: 'SandboxProductSeeded', data: { owner, product: { ...product, pricing_options } } });
      message = `pricing option ${optionId} seeded on ${productId}`;
      break;
    }
    case 'seed_creative_format': {
      const raw = params.format_id;
      const fid = typeof raw === 'string' ? { agent_url: agentFor(raw), id: raw } : isObj(raw) && typeof raw.id === 'string' ? { agent_url: typeof raw.agent_url === 'string' ? raw.agent_url : agentFor(raw.id), id: raw.id } : undefined;
      if (!fid || !/^[A-Za-z0-9_-]+$/.test(fid.id)) throw new ControllerError('INVALID_PARAMS', 'params.format_id is required (an id or {agent_url, id})');
      const format = { ...fixture, format_id: fid, name: typeof fixture.name === 'string' ? fixture.name : fid.id, type: typeof fixture.type === 'string' ? fixture.type : 'display', requirements: {}, assets: Array.isArray(fixture.assets) ? fixture.assets : [] };
      events.push({ type: 'SandboxFormatSeeded', data: { owner, format } });
      message = `format ${fid.id} seeded`;
      break;
    }
    default:
      throw new AppError('INVALID_REQUEST', `unknown seed scenario ${scenario}`);
  }
  await ctx.app.store.append(seedStream(owner), events.map((e) => ({ ...e, metadata: { time: cmd.now, principal: cmd.principal } })));
  await ctx.app.projections.waitFor(ctx.app.store.appendedUpTo());
  return { success: true, message };
}
