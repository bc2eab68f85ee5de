import fs from 'fs';
import path from 'path';
import { adcp31SchemaDir, adcp31Schemas } from '../../src/wire/adcp31/schemas';

/**
 * The AdCP 3.1.19 JSON Schemas the tests hold 3.1 answers to: the repository's complete copy
 * (`src/wire/adcp31/schemas-data/3.1.19`, see its README; the house copy in `../shared` lacks most
 * response schemas), or the folder `ADCP_31_SCHEMAS` names. A missing folder fails the tests that
 * need it, loudly.
 */
export const ADCP31_SCHEMA_DIR = process.env.ADCP_31_SCHEMAS ?? adcp31SchemaDir();

export function adcp31(): ReturnType<typeof adcp31Schemas> {
  if (!fs.existsSync(path.join(ADCP31_SCHEMA_DIR, 'manifest.json'))) {
    throw new Error(`the AdCP 3.1.19 schemas are not at ${ADCP31_SCHEMA_DIR} (set ADCP_31_SCHEMAS to their folder)`);
  }
  return adcp31Schemas(ADCP31_SCHEMA_DIR);
}
