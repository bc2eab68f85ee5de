/** AdCP version ordering: major.minor.patch, then beta < rc < stable, then the prerelease number. */
export function versionKey(v: string): number[] {
  const m = /^(\d+)\.(\d+)\.(\d+)(?:-(rc|beta)\.(\d+))?$/.exec(v);
  if (!m) return [-1];
  const stage = m[4] === 'beta' ? 0 : m[4] === 'rc' ? 1 : 2;
  return [Number(m[1]), Number(m[2]), Number(m[3]), stage, Number(m[5] ?? 0)];
}

export function compareVersions(a: string, b: string): number {
  const x = versionKey(a);
  const y = versionKey(b);
  for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}

/**
 * `compliance_target` → the newest matching bundle (reference §1.3): `3.1` the newest stable
 * 3.1.N, `3.1-rc` / `3.1-beta` the newest 3.1.0-rc.N / -beta.N, `3.1-rc.14` the wire form of
 * 3.1.0-rc.14, or an exact version. Unset: the newest stable bundle. Undefined when nothing matches.
 */
export function resolveTarget(target: string | undefined, available: readonly string[]): string | undefined {
  const sorted = [...available].sort(compareVersions).reverse();
  const stable = (v: string) => !v.includes('-');
  if (target === undefined || target === '') return sorted.find(stable) ?? sorted[0];
  if (/^\d+\.\d+\.\d+(-(rc|beta)\.\d+)?$/.test(target)) return sorted.find((v) => v === target);
  let m = /^(\d+)\.(\d+)$/.exec(target);
  if (m) return sorted.find((v) => stable(v) && v.startsWith(`${m![1]}.${m![2]}.`));
  m = /^(\d+)\.(\d+)-(rc|beta)$/.exec(target);
  if (m) return sorted.find((v) => v.startsWith(`${m![1]}.${m![2]}.0-${m![3]}.`));
  m = /^(\d+)\.(\d+)-(rc|beta)\.(\d+)$/.exec(target);
  if (m) return sorted.find((v) => v === `${m![1]}.${m![2]}.0-${m![3]}.${m![4]}`);
  return undefined;
}
