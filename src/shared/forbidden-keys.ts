/**
 * Keys no input may carry: `__proto__` anywhere, or a `constructor` holding a `prototype`. They are
 * how JSON poisons an object's prototype once merged into another, so every binding refuses them
 * (Fastify's parser for bodies, the GraphQL JSON scalar for document literals and variables), in
 * these words.
 */
export const FORBIDDEN_KEY_MESSAGE = 'the request contains a "__proto__" or "constructor.prototype" key, which no field accepts';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** Whether a parsed value holds such a key at any depth (a walk with its own stack: no recursion limit). */
export function hasForbiddenKey(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length) {
    const v = pending.pop();
    if (!isRecord(v)) continue;
    if (!Array.isArray(v)) {
      if (Object.hasOwn(v, '__proto__')) return true;
      if (Object.hasOwn(v, 'constructor') && isRecord(v.constructor) && Object.hasOwn(v.constructor, 'prototype')) return true;
    }
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (isRecord(child)) pending.push(child);
  }
  return false;
}
