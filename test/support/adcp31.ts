import fs from 'fs';
import path from 'path';
import { adcp31Schemas } from '../../src/wire/adcp31/schemas';

/**
 * The AdCP 3.1.19 JSON Schemas the tests hold 3.1 answers to: the repository's complete copy
 * (`test/fixtures/adcp-schemas/3.1.19`, see its README; the house copy in `../shared` lacks most
 * response schemas), or the folder `ADCP_31_SCHEMAS` names. The gateway itself never reads them;
 * a missing folder fails the tests that need it, loudly.
 */
export const ADCP31_SCHEMA_DIR = process.env.ADCP_31_SCHEMAS ?? path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'adcp-schemas', '3.1.19');

export function adcp31(): ReturnType<typeof adcp31Schemas> {
  if (!fs.existsSync(path.join(ADCP31_SCHEMA_DIR, 'manifest.json'))) {
    throw new Error(`the AdCP 3.1.19 schemas are not at ${ADCP31_SCHEMA_DIR} (set ADCP_31_SCHEMAS to their folder)`);
  }
  return adcp31Schemas(ADCP31_SCHEMA_DIR);
}
