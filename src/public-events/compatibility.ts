type Schema = Record<string, unknown>;

/** What makes up a node's own type (not its children's): any difference here retypes the field. */
const OWN_KEYS = ['type', 'enum', 'const', 'format', 'pattern', 'anyOf', 'oneOf', 'allOf', 'additionalProperties', 'minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems'];

function own(node: Schema): string {
  return JSON.stringify(OWN_KEYS.map((k) => [k, node[k]]));
}

const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * How `current` breaks consumers of `published` (a public event's JSON Schema, same name and
 * version): a field removed or retyped, one newly required or no longer required, and — since the
 * published objects refuse unknown properties — a field added. Empty: nothing a consumer validating
 * against `published` would notice. Descriptions and titles may change freely.
 */
export function breakingChanges(published: Schema, current: Schema, at = '(root)'): string[] {
  const out: string[] = [];
  if (own(published) !== own(current)) {
    out.push(`${at}: retyped`);
    return out;
  }
  const before = isSchema(published.properties) ? published.properties : {};
  const after = isSchema(current.properties) ? current.properties : {};
  const field = (name: string) => (at === '(root)' ? name : `${at}.${name}`);
  for (const name of Object.keys(before)) {
    if (!(name in after)) out.push(`${field(name)}: removed`);
    else if (isSchema(before[name]) && isSchema(after[name])) out.push(...breakingChanges(before[name], after[name], field(name)));
  }
  for (const name of Object.keys(after)) if (!(name in before)) out.push(`${field(name)}: added (published objects refuse unknown fields)`);
  const wasRequired = new Set(Array.isArray(published.required) ? (published.required as string[]) : []);
  const isRequired = new Set(Array.isArray(current.required) ? (current.required as string[]) : []);
  for (const name of isRequired) if (!wasRequired.has(name) && name in before) out.push(`${field(name)}: newly required`);
  for (const name of wasRequired) if (!isRequired.has(name) && name in after) out.push(`${field(name)}: no longer required`);
  if (isSchema(published.items) && isSchema(current.items)) out.push(...breakingChanges(published.items, current.items, `${at}[]`));
  return out;
}
