import { createHash } from 'node:crypto';
import path from 'node:path';
import { catalogQueries } from '../../projections/catalog';
import { CATALOG_STREAM, catalogDecider, catalogFileSchema, type Catalog } from '../domain/catalog/catalog';
import type { EventStore } from '../eventstore/port';
import { readConfigFile } from '../config';
import { handleCommand, type CommandContext } from './command-handler';
import type { TaskPorts } from './ports';

/** The demo catalog shipped for the embedded quick start (read from the sources; tsc copies no JSON). */
export const DEMO_CATALOG = path.join(__dirname, '..', '..', '..', 'src', 'domain', 'catalog', 'demo-catalog.json');

/** Reads and validates a catalog file; a bad file is a configuration error naming the field. */
export function loadCatalogFile(file: string): Catalog {
  return readConfigFile('CATALOG_FILE', file, catalogFileSchema);
}

/** Publishes the catalog when its content changed since the last publish (a no-op otherwise). */
export async function publishCatalog(store: EventStore, file: string, ctx: CommandContext): Promise<{ published: boolean; hash: string }> {
  const catalog = loadCatalogFile(file);
  const hash = createHash('sha256').update(JSON.stringify(catalog)).digest('hex');
  const { events } = await handleCommand(store, CATALOG_STREAM, catalogDecider, { type: 'PublishCatalog', hash, source: path.basename(file), catalog, now: ctx.now }, ctx);
  return { published: events.length > 0, hash };
}

/** The published catalog's products and publisher properties, in catalog order (what the agent's capabilities are drawn from). */
export async function publishedPortfolio(ports: Pick<TaskPorts, 'readModels'>) {
  const [products, properties] = await Promise.all([catalogQueries.products(ports.readModels), catalogQueries.properties(ports.readModels)]);
  return { products, properties };
}
