import type { ResolvedBrand } from './resolve';

/** A brand.json crawl's outcome (identity null: none found), or an operator's registration. */
export type BrandEvent =
  | { readonly type: 'BrandCrawled'; readonly data: { readonly domain: string; readonly identity: ResolvedBrand | null; readonly error?: string; readonly at: string } }
  | { readonly type: 'BrandRegistered'; readonly data: { readonly domain: string; readonly identity: ResolvedBrand; readonly at: string } };

export const brandStream = (domain: string) => `brand-${domain}`;
