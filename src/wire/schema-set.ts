import fs from 'fs';
import path from 'path';
import Ajv, { type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';

/**
 * One AdCP release's published JSON Schemas (draft-07, each file's `$id` its path under
 * `/schemas/<version>/`, `$ref`s absolute), with the release's `manifest.json` naming each tool's
 * request and response schemas. The gateway's codecs are hand-written; this is how tests and
 * diagnostics hold them to the published shapes rather than to our reading of them. Schemas are
 * read and registered once, on first use; each one is compiled when first asked for.
 */

export interface SchemaValidation {
  valid: boolean;
  /** `<instancePath> <message> (<schemaPath>)`, at most {@link MAX_ERRORS}. */
  errors: string[];
  /** The schema used, relative to the release's folder, e.g. `media-buy/create-media-buy-response.json`. */
  schema: string;
}

export interface SchemaSet {
  /** Tools the release's manifest names. */
  toolNames(): string[];
  /** Validates against one schema, named by its path under the release's folder (`core/error.json`). */
  validate(schema: string, body: unknown): SchemaValidation;
  /**
   * A tool's answer against its response schema. An answer whose `status` is `submitted`,
   * `working` or `input-required` is checked against the tool's schema for that status, unless
   * the response schema itself has a branch for it (3.0 `create_media_buy` and `sync_creatives`
   * define their submitted envelope there, requiring `task_id`; the per-status schemas require
   * nothing).
   */
  validateResponse(toolName: string, body: unknown): SchemaValidation;
  /** A tool's request against its request schema. */
  validateRequest(toolName: string, body: unknown): SchemaValidation;
}

interface ManifestTool {
  request_schema: string;
  response_schema: string;
  async_response_schemas: string[];
}

interface Loaded {
  ajv: Ajv;
  idPrefix: string;
  tools: Readonly<Record<string, ManifestTool>>;
}

const MAX_ERRORS = 10;
/** Task statuses whose answer is a progress payload with its own schema, not the tool's result. */
const ASYNC_STATUSES = new Set(['submitted', 'working', 'input-required']);
/** Registry files at the folder's root: not payload schemas (index.json refs schemas not shipped). */
const ROOT_SKIP = new Set(['manifest.json', 'manifest.schema.json', 'index.json']);

function jsonFiles(dir: string, rel = ''): string[] {
  return fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((e) => {
    const file = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) return jsonFiles(dir, file);
    return e.name.endsWith('.json') && !(rel === '' && ROOT_SKIP.has(e.name)) ? [file] : [];
  });
}

function describe(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  const hint =
    p.allowedValues !== undefined ? `: ${JSON.stringify(p.allowedValues)}`
    : p.allowedValue !== undefined ? `: ${JSON.stringify(p.allowedValue)}`
    : p.additionalProperty !== undefined ? `: '${p.additionalProperty}'`
    : '';
  return `${e.instancePath || '/'} ${e.message}${hint} (${e.schemaPath})`;
}

/** The schemas of one release, read from `dir()` (asked for on first use) and named `label` in errors. */
export function schemaSet(label: string, dir: () => string): SchemaSet {
  let loaded: Loaded | undefined;

  function load(): Loaded {
    if (loaded) return loaded;
    const root = dir();
    const manifest = JSON.parse(fs.readFileSync(path.join(root, 'manifest.json'), 'utf8'));
    const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
    addFormats(ajv);
    let idPrefix = '';
    for (const file of jsonFiles(root)) {
      const schema = JSON.parse(fs.readFileSync(path.join(root, file), 'utf8'));
      if (typeof schema.$id !== 'string' || !schema.$id.endsWith(`/${file}`)) throw new Error(`AdCP ${label} schema ${file} has $id ${schema.$id}`);
      idPrefix ||= schema.$id.slice(0, -file.length);
      ajv.addSchema(schema);
    }
    loaded = { ajv, idPrefix, tools: manifest.tools };
    return loaded;
  }

  function tool(name: string): ManifestTool {
    const { tools } = load();
    const t = Object.hasOwn(tools, name) ? tools[name] : undefined;
    if (!t) throw new Error(`Unknown AdCP ${label} tool: ${name}`);
    return t;
  }

  function compiled(schema: string) {
    const { ajv, idPrefix } = load();
    const validate = ajv.getSchema(idPrefix + schema);
    if (!validate) throw new Error(`AdCP ${label} schema not found: ${schema}`);
    return validate;
  }

  function hasStatusBranch(schema: string, status: string): boolean {
    const branches = (compiled(schema).schema as { oneOf?: Array<{ properties?: { status?: { const?: unknown } } }> }).oneOf ?? [];
    return branches.some((b) => b.properties?.status?.const === status);
  }

  function validate(schema: string, body: unknown): SchemaValidation {
    const v = compiled(schema);
    const valid = v(body) as boolean;
    return { valid, errors: valid ? [] : (v.errors ?? []).slice(0, MAX_ERRORS).map(describe), schema };
  }

  return {
    toolNames: () => Object.keys(load().tools),
    validate,
    validateResponse(toolName, body) {
      const t = tool(toolName);
      const status = body !== null && typeof body === 'object' ? (body as { status?: unknown }).status : undefined;
      if (typeof status === 'string' && ASYNC_STATUSES.has(status)) {
        const asyncSchema = t.async_response_schemas.find((s) => s.endsWith(`-async-response-${status}.json`));
        if (asyncSchema && !hasStatusBranch(t.response_schema, status)) return validate(asyncSchema, body);
      }
      return validate(t.response_schema, body);
    },
    validateRequest: (toolName, body) => validate(tool(toolName).request_schema, body),
  };
}
