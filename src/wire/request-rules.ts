import { AppError } from '../shared/errors';
import { fieldPath } from '../shared/field-path';
import { isObject } from '../shared/objects';
import { validateAdcp3 } from './adcp3/schemas';
import type { SchemaValidation } from './schema-set';

type Obj = Record<string, unknown>;

/**
 * What a release asks of a request beyond the task's own schema (the answers are its codec's,
 * `answer-codec.ts`). The bindings that negotiate a release (MCP, A2A, REST with a version) apply
 * its rules before the task runs; nothing in a task knows which release asked.
 */
export interface ReleaseRequestRules {
  /** Reads whose `idempotency_key` is honoured with keyed replay (same key, same answer). */
  readonly keyedReads: ReadonlySet<string>;
  /** Refuses (AppError) a request this release's schema rules out for `tool`. */
  check(tool: string, args: Obj): void;
}

/** A JSON Pointer's segments (`/packages/0/x` → `['packages', 0, 'x']`), array indexes as numbers. */
function pointerSegments(pointer: string): (string | number)[] {
  if (pointer === '/' || pointer === '') return [];
  return pointer
    .split('/')
    .slice(1)
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((seg) => (/^\d+$/.test(seg) ? Number(seg) : seg));
}

/**
 * A package's targeting overlay is kept and echoed back on every answer about the buy, so it must
 * be valid targeting in the caller's release (`core/targeting.json` of that release): refused with
 * the field at fault otherwise, never stored to make a later answer invalid.
 */
export function checkTargeting(tool: string, args: Obj, validate: (schema: string, body: unknown) => SchemaValidation, release: string): void {
  if (tool !== 'create_media_buy' && tool !== 'update_media_buy') return;
  const packages = Array.isArray(args.packages) ? args.packages : [];
  packages.forEach((p, i) => {
    if (!isObject(p) || p.targeting_overlay === undefined) return;
    const check = validate('core/targeting.json', p.targeting_overlay);
    if (check.valid) return;
    const [pointer = '/', ...words] = check.errors[0]!.split(' ');
    const field = fieldPath(['packages', i, 'targeting_overlay', ...pointerSegments(pointer)]);
    throw new AppError('VALIDATION_ERROR', `${field} ${words.join(' ').replace(/ \([^()]*\)$/, '')} (AdCP ${release} targeting)`, field);
  });
}

/** AdCP 3.0: a read's idempotency_key is ignored; a kept targeting overlay must be 3.0 targeting. */
export const requestRules30: ReleaseRequestRules = { keyedReads: new Set(), check: (tool, args) => checkTargeting(tool, args, validateAdcp3, '3.0') };
