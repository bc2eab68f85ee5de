import fs from 'node:fs';
import path from 'node:path';
import { schemaSet, type SchemaSet } from '../schema-set';

/**
 * AdCP 3.1 payloads checked against the spec's 3.1 JSON Schemas (3.1.19: draft-07, `$id`s under
 * `/schemas/3.1.19/`). No installable package bundles 3.1 yet, so the repository keeps a copy
 * (`schemas-data/3.1.19`, see its README), found from the package root whether this runs from
 * `src` or `dist`. One set per folder; a schema is compiled when first asked for.
 */
const sets = new Map<string, SchemaSet>();

export function adcp31Schemas(dir: string = adcp31SchemaDir()): SchemaSet {
  let set = sets.get(dir);
  if (!set) sets.set(dir, (set = schemaSet('3.1', () => dir)));
  return set;
}

let schemaDir: string | undefined;

/** The repository's copy of the 3.1.19 schemas (found once: 3.1 requests ask for it on every create). */
export function adcp31SchemaDir(): string {
  if (schemaDir) return schemaDir;
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return (schemaDir = path.join(dir, 'src', 'wire', 'adcp31', 'schemas-data', '3.1.19'));
}
