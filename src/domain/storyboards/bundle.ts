import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

const indexSchema = z.object({
  adcp_version: z.string().min(1),
  universal: z.array(z.string()).default([]),
  protocols: z.array(z.object({ id: z.string(), has_baseline: z.boolean().optional(), path: z.string().optional() }).passthrough()).default([]),
  specialisms: z.array(z.object({ id: z.string(), path: z.string().optional() }).passthrough()).default([]),
});

export type Storyboard = Record<string, unknown> & { id: string; phases: Record<string, unknown>[] };
export type TestKit = Record<string, unknown> & { id: string };

export interface Bundle {
  adcp_version: string;
  source: string;
  /** sha-256 over every file the bundle was read from: an unchanged bundle is not imported twice. */
  hash: string;
  storyboards: Storyboard[];
  test_kits: TestKit[];
}

/** A semantic version directory name: 3.0.6, 3.1.0-rc.14, 3.2.0-beta.5. */
export const VERSION_DIR = /^\d+\.\d+\.\d+(?:-(?:rc|beta)\.\d+)?$/;

function yamlFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  // Sorted, index.yaml first, subdirectories in their sorted place (the SDK loader's order).
  const entries = fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name === 'index.yaml' ? -1 : b.name === 'index.yaml' ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return entries.flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return yamlFiles(full);
    return /\.ya?ml$/.test(e.name) ? [full] : [];
  });
}

/**
 * Reads one AdCP compliance bundle directory the way `@adcp/sdk`'s loader does: `index.json`
 * names the universal files, the protocol baselines (`has_baseline`) and the specialisms; every
 * YAML file with a top-level `id` and `phases` is a storyboard (a missing `steps` becomes []),
 * the first of an id wins, and `test-kits/*.yaml` with an `id` are test kits. Throws for a
 * bundle that cannot be read (no or bad `index.json`).
 */
export function loadBundle(dir: string): Bundle {
  const { index, files, kitFiles, hash } = readBundle(dir);
  const storyboards: Storyboard[] = [];
  const seen = new Set<string>();
  for (const file of files) {
    const text = fs.readFileSync(file, 'utf8');
    let doc: unknown;
    try {
      doc = parseYaml(text);
    } catch {
      continue; // the SDK skips a file that does not parse
    }
    const s = doc as Partial<Storyboard> | null;
    if (!s || typeof s.id !== 'string' || !Array.isArray(s.phases) || seen.has(s.id)) continue;
    seen.add(s.id);
    storyboards.push({ ...s, phases: s.phases.map((p) => ({ ...p, steps: Array.isArray(p.steps) ? p.steps : [] })), adcp_version: index.adcp_version } as Storyboard);
  }
  const test_kits: TestKit[] = [];
  for (const file of kitFiles) {
    const text = fs.readFileSync(file, 'utf8');
    try {
      const kit = parseYaml(text) as Partial<TestKit> | null;
      if (kit && typeof kit.id === 'string') test_kits.push(kit as TestKit);
    } catch {
      // a kit that does not parse is skipped, as the SDK does
    }
  }
  return { adcp_version: index.adcp_version, source: dir, hash, storyboards, test_kits };
}

/** The files a bundle is read from, and their hash: enough to know an import can be skipped without parsing any YAML. */
export function readBundle(dir: string): { index: z.infer<typeof indexSchema>; files: string[]; kitFiles: string[]; hash: string } {
  const indexText = fs.readFileSync(path.join(dir, 'index.json'), 'utf8');
  const index = indexSchema.parse(JSON.parse(indexText));
  const files = [
    ...index.universal.map((name) => path.join(dir, 'universal', `${name}.yaml`)).filter((f) => fs.existsSync(f)),
    ...index.protocols.filter((p) => p.has_baseline).flatMap((p) => yamlFiles(path.join(dir, p.path ?? `protocols/${p.id}/`))),
    ...index.specialisms.flatMap((s) => yamlFiles(path.join(dir, s.path ?? `specialisms/${s.id}/`))),
  ];
  const kitFiles = yamlFiles(path.join(dir, 'test-kits'));
  const hash = createHash('sha256').update(indexText);
  for (const file of [...files, ...kitFiles]) hash.update(fs.readFileSync(file));
  return { index, files, kitFiles, hash: hash.digest('hex') };
}

/** The kit id a storyboard names: `test-kits/acme-outdoor.yaml` → `acme_outdoor`. */
export function testKitIdOf(storyboard: Record<string, unknown>): string | undefined {
  const ref = (storyboard.prerequisites as { test_kit?: unknown } | undefined)?.test_kit;
  if (typeof ref !== 'string') return undefined;
  return path.basename(ref).replace(/\.ya?ml$/, '').replace(/-/g, '_');
}
