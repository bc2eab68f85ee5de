import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The layers of .dependency-cruiser.cjs (docs/architecture/README.md), checked on the real tree:
 * no violation at all (no upward import, no circle, type-only imports included), as
 * `npm run deps:check` checks. Then scratch files, written into the tree and removed again, prove that
 * the rules bite (so weakening the rule file fails this test too).
 *
 * dependency-cruiser's JS API is ESM only, which Jest's CommonJS runtime cannot import without
 * --experimental-vm-modules, so its CLI is spawned and its JSON read instead.
 */
const root = path.resolve(__dirname, '..', '..', '..');
const bin = path.join(root, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const ROOTS = ['src', 'projections', 'consumers'];

interface Violation {
  type: string;
  from: string;
  to: string;
  rule: { name: string; severity: string };
  cycle?: { name: string }[];
}
interface CruiseResult {
  modules: { source: string }[];
  summary: { error: number; warn: number; info: number; ignore: number; violations: Violation[]; optionsUsed: { tsPreCompilationDeps?: unknown } };
}

function cruise(targets: string[], extra: string[] = []): CruiseResult {
  const run = spawnSync(
    process.execPath,
    [bin, '--config', '.dependency-cruiser.cjs', '--output-type', 'json', ...extra, ...targets],
    { cwd: root, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
  );
  if (run.error) throw run.error;
  try {
    return JSON.parse(run.stdout) as CruiseResult;
  } catch {
    throw new Error(`depcruise exited ${run.status} without JSON:\n${run.stderr}\n${run.stdout.slice(0, 2000)}`);
  }
}

function tsFiles(dir: string): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) return tsFiles(rel);
    return e.isFile() && e.name.endsWith('.ts') && !e.name.startsWith('__scratch_') ? [rel] : [];
  });
}

describe('architecture (dependency-cruiser layers)', () => {
  it('the whole tree (src, projections, consumers) has no violation, type-only imports included', () => {
    const result = cruise(ROOTS);
    expect(result.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}${v.cycle ? ` (cycle ${v.cycle.map((c) => c.name).join(' -> ')})` : ''}`)).toEqual([]);
    expect(result.summary.error).toBe(0);
    expect(result.summary.optionsUsed.tsPreCompilationDeps).toBe(true);
    // Every TypeScript file of the three roots was cruised (no exclude has crept over them).
    const cruised = new Set(result.modules.map((m) => m.source));
    const missing = ROOTS.flatMap(tsFiles).filter((f) => !cruised.has(f));
    expect(missing).toEqual([]);
  });

  it('the rules bite: an upward import from each layer, a binding reaching data, a file in no layer', () => {
    const tag = scratchTag();
    // Each scratch file: [path, content, rules it must break]. Targets are long-lived modules.
    const scratch: [string, string, string[]][] = [
      [`src/shared/${tag}.ts`, "import '../domain/decider';\n", ['no-upward-from-base']],
      [`src/domain/${tag}.ts`, "import type { App } from '../app';\nexport type Scratch = App;\n", ['domain-imports-only-base-and-domain', 'no-import-of-app']],
      [`projections/${tag}.ts`, "import '../src/application/adagents';\n", ['no-upward-from-read-models']],
      [`src/application/${tag}.ts`, "import '../http/errors';\n", ['no-upward-from-application']],
      [`consumers/${tag}.ts`, "import '../src/http/errors';\n", ['no-upward-from-adapters']],
      [`src/http/${tag}.ts`, "import '../main';\nimport type { ReadModelStore } from '../readmodel/port';\nexport type Scratch = ReadModelStore;\n", ['no-upward-from-bindings', 'bindings-not-to-data']],
      [`src/${tag}.ts`, "import './logger';\n", ['module-in-no-layer']],
    ];
    withScratch(scratch, () => {
      // Depth 1: the scratch files and what they import directly, not the rest of the tree.
      const result = cruise(scratch.map(([file]) => file), ['--max-depth', '1']);
      const found = new Set(errors(result).map((v) => `${v.from} ${v.rule.name}`));
      const expected = scratch.flatMap(([file, , rules]) => rules.map((rule) => `${file} ${rule}`));
      expect(expected.filter((e) => !found.has(e))).toEqual([]);
      expect([...found].filter((f) => !expected.includes(f))).toEqual([]);
    });
  });

  it('the rules bite: two modules importing only each other\'s types are a circle', () => {
    const tag = scratchTag();
    const a = `src/domain/${tag}_a.ts`;
    const b = `src/domain/${tag}_b.ts`;
    const scratch: [string, string][] = [
      [a, `import type { B } from './${tag}_b';\nexport interface A { b?: B }\n`],
      [b, `import type { A } from './${tag}_a';\nexport interface B { a?: A }\n`],
    ];
    withScratch(scratch, () => {
      const found = errors(cruise([a, b]));
      expect(found.length).toBeGreaterThan(0);
      for (const v of found) {
        expect(v.rule.name).toBe('no-circular');
        expect(new Set(v.cycle?.map((c) => c.name))).toEqual(new Set([a, b]));
      }
    });
  });
});

function scratchTag(): string {
  return `__scratch_${process.pid}_${randomBytes(4).toString('hex')}`;
}

function errors(result: CruiseResult): Violation[] {
  return result.summary.violations.filter((v) => v.rule.severity === 'error');
}

/** Writes the files (never over an existing one), runs `body`, and removes them whatever happens. */
function withScratch(files: readonly (readonly [string, string, ...unknown[]])[], body: () => void): void {
  try {
    for (const [file, content] of files) fs.writeFileSync(path.join(root, file), content, { flag: 'wx' });
    body();
  } finally {
    for (const [file] of files) fs.rmSync(path.join(root, file), { force: true });
  }
}
