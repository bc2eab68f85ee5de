import { schemaSet, type SchemaSet } from '../schema-set';

/**
 * AdCP 3.1 payloads checked against the spec's 3.1 JSON Schemas (3.1.19: draft-07, `$id`s under
 * `/schemas/3.1.19/`). The gateway ships no copy of them and never reads them while serving: no
 * installable package bundles 3.1 yet, so whoever validates names the folder (the tests use the
 * repository's complete copy, `test/fixtures/adcp-schemas/3.1.19`). One set per folder.
 */
const sets = new Map<string, SchemaSet>();

export function adcp31Schemas(dir: string): SchemaSet {
  let set = sets.get(dir);
  if (!set) sets.set(dir, (set = schemaSet('3.1', () => dir)));
  return set;
}
