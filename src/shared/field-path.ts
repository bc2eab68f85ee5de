/** `['packages', 0, 'budget']` → `packages[0].budget`, the field-path style of the spec's errors. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : out ? `.${String(part)}` : String(part);
  return out;
}
