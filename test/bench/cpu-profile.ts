import fs from 'node:fs';

/**
 * Summaries of a V8 `.cpuprofile` (from `node --cpu-prof`): the functions with the most samples
 * of their own (`self`), or on the stack at all (`inclusive`: each sample counted once per
 * function, so a caller holds everything below it). Percent of all samples, with file:line.
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

const nameOf = ({ callFrame: { functionName, url, lineNumber } }: ProfileNode) =>
  `${functionName || '(anonymous)'} ${url ? `${url.replace(/^.*\/(dist|node_modules)\//, '$1/')}:${lineNumber + 1}` : ''}`.trim();

export function printProfileSummary(file: string, mode: 'self' | 'inclusive', top = 20): void {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[] };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const counts = new Map<string, number>();
  for (const id of profile.samples) {
    if (mode === 'self') {
      const name = nameOf(byId.get(id)!);
      counts.set(name, (counts.get(name) ?? 0) + 1);
      continue;
    }
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const name = nameOf(byId.get(at)!);
      if (!seen.has(name)) counts.set(name, (counts.get(name) ?? 0) + 1);
      seen.add(name);
    }
  }
  const total = profile.samples.length;
  for (const [name, count] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`${((100 * count) / total).toFixed(1).padStart(5)}%  ${name}\n`);
  }
}
