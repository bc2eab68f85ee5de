import { z } from 'zod';
import { AppError } from '../shared/errors';
import { HTTP_URL_MESSAGE, isHttpUrl } from '../shared/http-url';
import { fieldPath } from '../shared/field-path';


function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = input;
  for (const part of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[part];
  }
  return v;
}

type Issue = { code: string; path: readonly PropertyKey[]; message: string; errors?: Issue[][] };

/**
 * A union's failure as the field its branches all failed at, when they agree (brand_manifest's
 * two shapes with the same bad `url`): that field, not the union, is what the caller must fix.
 */
function agreedIssue(issue: Issue): Issue {
  while (issue.code === 'invalid_union' && issue.errors?.length) {
    const firsts = issue.errors.map((branch) => branch[0]);
    const [first] = firsts;
    if (!first || firsts.some((f) => !f || f.message !== first.message || fieldPath(f.path) !== fieldPath(first.path))) break;
    issue = { ...first, path: [...issue.path, ...first.path] };
  }
  return issue;
}

/**
 * One failing field as the wire versions may list it: its path, the message, and which rule
 * refused it in JSON Schema's words (what AdCP 3.1's `issues[].keyword` names).
 */
function describedIssue(issue: Issue & { origin?: string }, input: unknown): { field: string; message: string; keyword: string } {
  const absent = issue.code === 'invalid_type' && valueAt(input, issue.path) === undefined;
  return { field: fieldPath(issue.path), message: issue.message, keyword: absent ? 'required' : keywordOf(issue) };
}

function keywordOf(issue: Issue & { origin?: string }): string {
  const sized = issue.origin === 'string' ? 'Length' : issue.origin === 'array' || issue.origin === 'set' ? 'Items' : issue.origin === 'object' ? 'Properties' : undefined;
  switch (issue.code) {
    case 'invalid_type':
      return 'type';
    case 'too_small':
      return sized ? `min${sized}` : 'minimum';
    case 'too_big':
      return sized ? `max${sized}` : 'maximum';
    case 'invalid_value':
      return 'enum';
    case 'invalid_format':
      return 'format';
    case 'unrecognized_keys':
      return 'additionalProperties';
    case 'invalid_union':
      return 'oneOf';
    case 'not_multiple_of':
      return 'multipleOf';
    default:
      // A refinement: a field required only with another, or a rule of the task's own.
      return issue.message.startsWith('is required') ? 'required' : 'custom';
  }
}

/** How many of a refused input's failing fields an error lists. */
const MAX_ISSUES = 20;

/**
 * Parses a task input. A missing required field is INVALID_REQUEST (400, "check required fields");
 * any other schema failure is VALIDATION_ERROR (422). Either names the first failing field.
 * Schemas are passthrough objects: unknown fields are accepted, as AdCP requires.
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const parsed = schema.safeParse(input ?? {});
  if (parsed.success) return parsed.data;
  const issue = agreedIssue(parsed.error.issues[0]!);
  const field = fieldPath(issue.path);
  // A refinement may also find a field missing (one required only with another): its message says so.
  const missing = valueAt(input, issue.path) === undefined && (issue.code !== 'custom' || issue.message.startsWith('is required'));
  // Every failing field, for the wire versions that list them all (AdCP 3.1's `issues[]`).
  const details = { issues: parsed.error.issues.slice(0, MAX_ISSUES).map((i) => describedIssue(agreedIssue(i), input)) };
  if (missing) throw new AppError('INVALID_REQUEST', issue.code === 'custom' ? `${field} ${issue.message}` : `${field || 'request'} is required`, field || undefined, details);
  throw new AppError('VALIDATION_ERROR', `${field || 'request'}: ${issue.message}`, field || undefined, details);
}

/**
 * Every URL field of a task input that is stored and shown or fetched later: http(s) only, so a
 * `javascript:` or `data:` link never reaches a page that renders it (see shared/http-url.ts).
 * `.url()` keeps `format: uri` in the published OpenAPI; the refinement is the rule itself.
 */
export const httpUrlInput = z.string().url({ protocol: /^https?$/, error: HTTP_URL_MESSAGE }).refine(isHttpUrl, HTTP_URL_MESSAGE);

/** AdCP's `pagination` request: up to 100 per page, and an opaque cursor this agent issued. */
export const paginationInput = z.object({ max_results: z.number().int().min(1).max(100).optional(), cursor: z.string().max(512).optional() }).passthrough();

/** AdCP's idempotency_key: 16-255 of A-Z a-z 0-9 _ . : - (required on the 3.0 wire, checked there). */
export const idempotencyKeyInput = z.string().regex(/^[A-Za-z0-9_.:-]{16,255}$/, 'must be 16-255 of A-Z a-z 0-9 _ . : -').optional();

/** A hashed identifier (hashed_email, hashed_phone): lowercase hex SHA-256 of the normalized value. */
export const sha256HexInput = z.string().regex(/^[a-f0-9]{64}$/, 'must be a lowercase hex SHA-256 (normalize, then hash)');
