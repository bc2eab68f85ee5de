import { creativeQueries, type CreativeRow } from '../../projections/creatives';
import { previewQueries, type CreativePreview } from '../../projections/previews';
import type { TaskPorts } from './ports';

export type { CreativeRow } from '../../projections/creatives';
export type { CreativePreview } from '../../projections/previews';

/** Creatives of a buyer's library, and the previews preview_creative rendered of them. */

type Reads = Pick<TaskPorts, 'readModels'>;

/** Which creatives of an owner's library: by status (default: all but archived), type, id, after a cursor id, at most `limit`. */
export type CreativeFilter = { statuses?: string[]; formatTypes?: string[]; creativeIds?: string[]; after?: string; limit?: number };

/** An owner's creatives the filter names, by id. */
export function listCreatives(ports: Reads, owner: string, filter: CreativeFilter): Promise<CreativeRow[]> {
  return creativeQueries.list(ports.readModels, owner, filter);
}

/** A rendered preview by its id (expired ones included: the caller compares expires_at with its clock). */
export function creativePreview(ports: Reads, previewId: string): Promise<CreativePreview | undefined> {
  return previewQueries.byId(ports.readModels, previewId);
}
