import fs from 'node:fs';
import path from 'node:path';

/**
 * A file of an installed npm package, for the pages that serve browser builds from the gateway's
 * own packages. Found from the package's entry point up to its package.json: some (htm) do not
 * export their package.json, so `require.resolve('<name>/package.json')` fails for them.
 */
export function packageFile(name: string, ...parts: string[]): string {
  let dir = path.dirname(require.resolve(name));
  while (!fs.existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return path.join(dir, ...parts);
}
