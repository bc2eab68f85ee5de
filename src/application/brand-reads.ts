import { brandQueries } from '../../projections/brands';
import type { ResolvedBrand } from '../domain/brands/resolve';
import type { TaskPorts } from './ports';

/** A domain's brand identity as the registry holds it (registered outranks crawled; null: a crawl found none), and when it was last crawled. */
export interface KnownBrand {
  identity: ResolvedBrand | null;
  crawled_at: string | null;
}

/** The identities the registry holds for these domains; a domain never crawled nor registered is absent from the map. */
export function resolveBrands(ports: Pick<TaskPorts, 'readModels'>, domains: readonly string[]): Promise<Map<string, KnownBrand>> {
  return brandQueries.resolve(ports.readModels, domains);
}
