import { createHash } from 'node:crypto';
import { catalogQueries, formatKey } from '../../../projections/catalog';
import { sandboxCatalogQueries } from '../../../projections/sandbox-catalog';
import type { Format, PricingOption, Product } from '../../domain/catalog/catalog';
import { AppError } from '../../shared/errors';
import { creativeDecider, creativeStream, type CreativeContent } from '../../domain/creative/creative';
import { mediaBuyDecider, mediaBuyStream, type MediaBuyStatus, type MediaBuyTerms } from '../../domain/media-buy/media-buy';
import { handleCommand, loadState, startStream } from '../command-handler';
import type { CommandContext } from '../command-handler';
import type { ResolvedAccount } from '../accounts';
import type { TaskContext } from '../tasks/context';
import { looksIssued, storedFixtureBuyId } from '../buy-ids';
import { ControllerError, requireString } from './errors';
import { isObject } from '../../shared/objects';
import { HTTP_URL_MESSAGE, isHttpUrl } from '../../shared/http-url';
import { untilProjected } from '../projected';

/** The seed scenarios this seller honours (fixtures for a sandbox account's tests). */
export const SEED_SCENARIOS = ['seed_product', 'seed_pricing_option', 'seed_creative_format', 'seed_creative', 'seed_media_buy'] as const;

/** Where formats a fixture names without an agent come from: the standard creative agent. */
const DEFAULT_FORMAT_AGENT = 'https://creative.adcontextprotocol.org';

/** 3.0 names back to the catalog's (the reverse of the 3.0 answer codec). */
const CHANNEL: Readonly<Record<string, string>> = { olv: 'video' };
const PRICING_MODEL: Readonly<Record<string, string>> = { flat_rate: 'flat-fee' };

type Obj = Record<string, unknown>;
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

const seedStream = (owner: string) => `sandbox-catalog-${createHash('sha256').update(owner).digest('base64url').slice(0, 22)}`;

/** A URL in a fixture: stored and shown like a synced one, so http(s) only as sync_creatives asks. */
function fixtureUrl(value: unknown, at: string): string {
  if (!isHttpUrl(value)) throw new ControllerError('INVALID_PARAMS', `${at} ${HTTP_URL_MESSAGE}`);
  return value;
}

function fixtureOf(params: Obj): Obj {
  const f = params.fixture ?? {};
  if (!isObject(f)) throw new ControllerError('INVALID_PARAMS', 'params.fixture must be an object');
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
 * Every product and format a request sees. A buyer's sandbox is a self-contained test world:
 * once it has seeded products (or formats), those are the whole list its sandbox accounts see
 * (a request under a sandbox `account`), so a scripted test knows exactly what it will find;
 * until then, and for live accounts or none, the operator's catalog.
 */
export async function catalogFor(ctx: TaskContext, account: ResolvedAccount | undefined): Promise<{ products: Product[]; formats: Format[]; accountSpecific: boolean }> {
  const sandboxOwner = sandboxOwnerOf(ctx, account);
  // A sandbox account sees its own test world (seeded fixtures, the test product): not the published catalog.
  const accountSpecific = sandboxOwner !== undefined;
  const [seededProducts, seededFormats] = sandboxOwner
    ? await Promise.all([sandboxCatalogQueries.products(ctx.ports.readModels, sandboxOwner), sandboxCatalogQueries.formats(ctx.ports.readModels, sandboxOwner)])
    : [[], []];
  const formats = seededFormats.length ? seededFormats : await catalogQueries.formats(ctx.ports.readModels);
  if (seededProducts.length) return { products: seededProducts, formats, accountSpecific };
  const products = await catalogQueries.products(ctx.ports.readModels);
  return { products: sandboxOwner ? [...products, await testProduct(ctx)] : products, formats, accountSpecific };
}

/**
 * Every format a reference by id may name, each once: the request's own list (catalogFor) and the
 * operator's catalog. A sandbox that seeded its own formats lists only those, but syncing, building
 * or previewing a creative in a format the seller offers does not depend on the test world's
 * fixtures (the one rule: application/formats.ts `acceptFormat`).
 */
export async function formatsFor(ctx: TaskContext, account: ResolvedAccount | undefined): Promise<Format[]> {
  const { formats } = await catalogFor(ctx, account);
  const all = [...formats, ...(await catalogQueries.formats(ctx.ports.readModels))];
  const seen = new Set<string>();
  return all.filter((f) => {
    const key = formatKey(f.format_id);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * AdCP's harness names a placeholder product, `test-product` with pricing option `default`, when a
 * scripted test has discovered none; every sandbox that seeded no products of its own offers it
 * (a fixed-price CPM display product on the operator's first property and format).
 */
export const TEST_PRODUCT_ID = 'test-product';
async function testProduct(ctx: TaskContext): Promise<Product> {
  const [property] = await catalogQueries.properties(ctx.ports.readModels);
  const format = (await catalogQueries.formats(ctx.ports.readModels)).find((f) => f.type === 'display');
  return {
    product_id: TEST_PRODUCT_ID,
    name: 'Sandbox test product',
    description: 'The placeholder product every sandbox offers to scripted tests (fixed-price CPM display).',
    publisher_domains: [property?.publisher_domain ?? 'sandbox.example'],
    channels: ['display'],
    delivery_type: 'non_guaranteed',
    format_ids: [format?.format_id ?? { agent_url: DEFAULT_FORMAT_AGENT, id: 'display_300x250' }],
    targeting: {},
    pricing_options: [{ pricing_option_id: 'default', pricing_model: 'cpm', price: 10, currency: 'USD' }],
    delivery: { daily_impression_capacity: 1_000_000, ctr: 0.002 },
    requires_approval: false,
  } as Product;
}

/** Whose seeded catalog a request sees: the caller's own under a sandbox account, else none. */
const sandboxOwnerOf = (ctx: TaskContext, account: ResolvedAccount | undefined): string | undefined => (account?.sandbox ? ctx.principal.org : undefined);

/**
 * One product a request may buy: under a sandbox account, the caller's seeded product of that id
 * first; else the operator's. A sandbox's seeded products are the whole list it is shown
 * (catalogFor), but a product the caller was offered elsewhere (get_products without an account
 * lists the operator's catalog) stays buyable under its sandbox account: discovery and purchase
 * agree for one buyer.
 */
export async function productFor(ctx: TaskContext, account: ResolvedAccount | undefined, productId: string): Promise<Product | undefined> {
  const sandboxOwner = sandboxOwnerOf(ctx, account);
  if (sandboxOwner) {
    const seeded = await sandboxCatalogQueries.product(ctx.ports.readModels, sandboxOwner, productId);
    if (seeded) return seeded;
    if (productId === TEST_PRODUCT_ID && !(await sandboxCatalogQueries.products(ctx.ports.readModels, sandboxOwner)).length) return testProduct(ctx);
  }
  return ctx.ports.cache.get(`catalog:product:${productId}`, () => catalogQueries.product(ctx.ports.readModels, productId));
}

export async function seedScenario(ctx: TaskContext, account: ResolvedAccount | undefined, scenario: string, params: Obj, cmd: CommandContext): Promise<Obj> {
  const fixture = fixtureOf(params);
  const owner = ctx.principal.org;
  const [products, seededFormats, catalogFormats] = await Promise.all([
    sandboxCatalogQueries.products(ctx.ports.readModels, owner),
    sandboxCatalogQueries.formats(ctx.ports.readModels, owner),
    catalogQueries.formats(ctx.ports.readModels),
  ]);
  const formats = [...seededFormats, ...catalogFormats];
  const events: { type: string; data: Obj }[] = [];
  const agentFor = (id: string) => formats.find((f) => f.format_id.id === id)?.format_id.agent_url ?? DEFAULT_FORMAT_AGENT;
  /** Every format a seeded product names joins the sandbox's formats (a copy of the catalog's, if it has one). */
  const ensureFormat = (fid: { agent_url: string; id: string }, type: string) => {
    if (seededFormats.some((f) => formatKey(f.format_id) === formatKey(fid))) return;
    const known = catalogFormats.find((f) => formatKey(f.format_id) === formatKey(fid));
    const format = known ?? ({ format_id: fid, name: fid.id, type, requirements: {}, assets: [] } as unknown as Format);
    seededFormats.push(format);
    events.push({ type: 'SandboxFormatSeeded', data: { owner, format } });
  };
  let message: string;
  switch (scenario) {
    case 'seed_product': {
      const productId = requireString(params, 'product_id');
      const existing = products.find((p) => p.product_id === productId) ?? (await catalogQueries.product(ctx.ports.readModels, productId));
      const channels = Array.isArray(fixture.channels) ? fixture.channels.filter((c): c is string => typeof c === 'string').map((c) => CHANNEL[c] ?? c) : (existing?.channels ?? ['display']);
      const type = channels.includes('video') || channels.includes('ctv') ? 'video' : 'display';
      const formatIds = Array.isArray(fixture.format_ids)
        ? fixture.format_ids.map((f, i) => {
            if (!isObject(f) || typeof f.id !== 'string' || !/^[A-Za-z0-9_-]+$/.test(f.id)) throw new ControllerError('INVALID_PARAMS', `params.fixture.format_ids[${i}].id must be a format id`);
            return { agent_url: typeof f.agent_url === 'string' ? fixtureUrl(f.agent_url, `params.fixture.format_ids[${i}].agent_url`) : agentFor(f.id), id: f.id };
          })
        : (existing?.format_ids ?? [{ agent_url: DEFAULT_FORMAT_AGENT, id: type === 'video' ? 'video_30s' : 'display_300x250' }]);
      formatIds.forEach((f) => ensureFormat(f, type));
      const pricing = Array.isArray(fixture.pricing_options)
        ? fixture.pricing_options.map((o, i) => {
            if (!isObject(o) || typeof o.pricing_option_id !== 'string') throw new ControllerError('INVALID_PARAMS', `params.fixture.pricing_options[${i}].pricing_option_id is required`);
            return pricingOptionOf(productId, o.pricing_option_id, o);
          })
        : (existing?.pricing_options ?? []);
      const deliveryType = fixture.delivery_type === 'guaranteed' || fixture.delivery_type === 'non_guaranteed' ? fixture.delivery_type : (existing?.delivery_type ?? 'non_guaranteed');
      const product = {
        ...existing,
        product_id: productId,
        name: typeof fixture.name === 'string' ? fixture.name : (existing?.name ?? productId),
        description: typeof fixture.description === 'string' ? fixture.description : (existing?.description ?? `Sandbox fixture ${productId}`),
        publisher_domains: existing?.publisher_domains ?? [(await catalogQueries.properties(ctx.ports.readModels))[0]?.publisher_domain ?? 'sandbox.example'],
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
      if (!product) throw new ControllerError('NOT_FOUND', `no seeded product ${productId}: seed_product first`);
      const option = pricingOptionOf(productId, optionId, fixture);
      const pricing_options = [...product.pricing_options.filter((o) => o.pricing_option_id !== optionId), option];
      events.push({ type: 'SandboxProductSeeded', data: { owner, product: { ...product, pricing_options } } });
      message = `pricing option ${optionId} seeded on ${productId}`;
      break;
    }
    case 'seed_creative_format': {
      const raw = params.format_id;
      const fid = typeof raw === 'string' ? { agent_url: agentFor(raw), id: raw } : isObject(raw) && typeof raw.id === 'string' ? { agent_url: typeof raw.agent_url === 'string' ? fixtureUrl(raw.agent_url, 'params.format_id.agent_url') : agentFor(raw.id), id: raw.id } : undefined;
      if (!fid || !/^[A-Za-z0-9_-]+$/.test(fid.id)) throw new ControllerError('INVALID_PARAMS', 'params.format_id is required (an id or {agent_url, id})');
      const format = { ...fixture, format_id: fid, name: typeof fixture.name === 'string' ? fixture.name : fid.id, type: typeof fixture.type === 'string' ? fixture.type : 'display', requirements: {}, assets: Array.isArray(fixture.assets) ? fixture.assets : [] };
      events.push({ type: 'SandboxFormatSeeded', data: { owner, format } });
      message = `format ${fid.id} seeded`;
      break;
    }
    case 'seed_creative':
      return seedCreative(ctx, params, fixture, agentFor, cmd);
    case 'seed_media_buy':
      return seedMediaBuy(ctx, account, params, fixture, products, cmd);
    default:
      throw new AppError('INVALID_REQUEST', `unknown seed scenario ${scenario}`);
  }
  await ctx.ports.store.append(seedStream(owner), events.map((e) => ({ ...e, metadata: { time: cmd.now, principal: cmd.principal } })));
  await untilProjected(ctx.ports);
  return { success: true, message };
}

/** A creative in the buyer's library, as if synced under the sandbox account (status approved). */
async function seedCreative(ctx: TaskContext, params: Obj, fixture: Obj, agentFor: (id: string) => string, cmd: CommandContext): Promise<Obj> {
  const creativeId = requireString(params, 'creative_id');
  if (!/^[\w.:-]{1,255}$/.test(creativeId)) throw new ControllerError('INVALID_PARAMS', 'params.creative_id must be 1-255 of A-Z a-z 0-9 _ . : -');
  const fid = isObject(fixture.format_id) && typeof fixture.format_id.id === 'string' ? fixture.format_id : { id: 'display_300x250' };
  const formatId = { agent_url: typeof fid.agent_url === 'string' ? fixtureUrl(fid.agent_url, 'params.fixture.format_id.agent_url') : agentFor(fid.id as string), id: fid.id as string };
  const assets = isObject(fixture.assets) ? fixture.assets : {};
  for (const [kind, asset] of Object.entries(assets)) if (isObject(asset) && Object.hasOwn(asset, 'url')) fixtureUrl(asset.url, `params.fixture.assets.${kind}.url`);
  const content: CreativeContent = {
    creative_id: creativeId,
    owner: ctx.principal.org,
    name: typeof fixture.name === 'string' ? fixture.name : creativeId,
    format_id: formatId,
    format_type: /video/.test(formatId.id) ? 'video' : 'display',
    assets,
    assigned_to: [],
    sandbox: true,
  };
  const stream = creativeStream(ctx.principal.org, creativeId);
  // A fixture may replace the caller's own sandbox creative, never one synced for real: that one
  // stays as its buyer synced it (and as the seller approved it), whatever the test asks.
  const { state } = await loadState(ctx.ports.store, stream, creativeDecider);
  if (state.status !== 'none' && !state.content.sandbox) throw new ControllerError('FORBIDDEN', `creative ${creativeId} was not synced under a sandbox account`);
  const hash = createHash('sha256').update(JSON.stringify(content)).digest('hex');
  await handleCommand(ctx.ports.store, stream, creativeDecider, { type: 'SyncCreative', content, hash, now: cmd.now }, cmd);
  await untilProjected(ctx.ports);
  return { success: true, message: `creative ${creativeId} seeded` };
}

/** A media buy under the sandbox account, active from now for 30 days unless the fixture says otherwise. */
async function seedMediaBuy(ctx: TaskContext, account: ResolvedAccount | undefined, params: Obj, fixture: Obj, seeded: Product[], cmd: CommandContext): Promise<Obj> {
  const mediaBuyId = requireString(params, 'media_buy_id');
  if (!/^[\w.:-]{1,128}$/.test(mediaBuyId)) throw new ControllerError('INVALID_PARAMS', 'params.media_buy_id must be 1-128 of A-Z a-z 0-9 _ . : -');
  if (looksIssued(mediaBuyId)) throw new ControllerError('INVALID_PARAMS', 'params.media_buy_id has the shape of the ids this seller issues (mb_ and 22 characters): choose another');
  // Kept under this buyer: every buyer may seed the same fixture ids, and none learns of another's.
  const storedId = storedFixtureBuyId(ctx.principal.org, mediaBuyId);
  const product = seeded[0] ?? (await catalogQueries.products(ctx.ports.readModels))[0]!;
  const option = product.pricing_options[0];
  const currency = typeof fixture.currency === 'string' && /^[A-Z]{3}$/.test(fixture.currency) ? fixture.currency : (option?.currency ?? 'USD');
  const budget = typeof fixture.total_budget === 'number' && fixture.total_budget > 0 ? fixture.total_budget : 1000;
  const now = Date.parse(cmd.now);
  const terms: MediaBuyTerms = {
    media_buy_id: storedId,
    owner: ctx.principal.org,
    buyer_ref: `seed:${mediaBuyId}`,
    ...(account ? { account_id: account.account_id } : {}),
    sandbox: true,
    brand_manifest: { url: 'https://fixture.invalid/' },
    packages: [
      {
        package_id: `${mediaBuyId}_pkg_1`,
        product_id: product.product_id,
        pricing_option_id: option?.pricing_option_id ?? 'fixture',
        pricing_model: option?.pricing_model ?? 'cpm',
        rate: option?.price ?? option?.floor ?? 10,
        currency,
        budget,
        creative_ids: [],
      },
    ],
    start_time: typeof fixture.start_time === 'string' && !Number.isNaN(Date.parse(fixture.start_time)) ? new Date(fixture.start_time).toISOString() : new Date(now).toISOString(),
    end_time: typeof fixture.end_time === 'string' && !Number.isNaN(Date.parse(fixture.end_time)) ? new Date(fixture.end_time).toISOString() : new Date(now + 30 * 86_400_000).toISOString(),
    currency,
    total_budget: budget,
  };
  const status = typeof fixture.status === 'string' ? fixture.status : 'active';
  const stream = mediaBuyStream(storedId);
  const { state } = await loadState(ctx.ports.store, stream, mediaBuyDecider);
  if (state.status !== 'none') {
    if (!state.terms.sandbox) throw new ControllerError('FORBIDDEN', `media buy ${mediaBuyId} was bought under a live account`);
    return { success: true, message: `media buy ${mediaBuyId} already seeded` };
  }
  try {
    await startStream(ctx.ports.store, stream, mediaBuyDecider, { type: 'CreateMediaBuy', terms, needsApproval: false, now: cmd.now }, cmd);
    const domain = ({ paused: 'paused', completed: 'completed', canceled: 'canceled', rejected: 'rejected' } as Record<string, MediaBuyStatus>)[status];
    if (domain || ['active', 'pending_creatives', 'pending_start'].includes(status)) {
      await handleCommand(ctx.ports.store, stream, mediaBuyDecider, { type: 'ForceMediaBuyStatus', status: domain ?? 'active', viewStatus: status, now: cmd.now }, cmd);
    }
  } catch (err) {
    if (err instanceof AppError) throw new ControllerError('INVALID_PARAMS', err.message);
    throw err;
  }
  await untilProjected(ctx.ports);
  return { success: true, message: `media buy ${mediaBuyId} seeded (${status})` };
}
