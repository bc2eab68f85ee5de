import path from 'path';
import { schemaSet, type SchemaValidation } from '../schema-set';

/**
 * AdCP 3.0 payloads checked against the spec's own JSON Schemas, the ones `@adcp/sdk` bundles
 * (3.0.6: draft-07, `$id`s and `$ref`s absolute under `/schemas/3.0.x/`).
 */
export type Adcp3Validation = SchemaValidation;

/** Where @adcp/sdk keeps them (its `manifest.json` names each tool's schemas). */
export const adcp3SchemaDir = (): string => path.join(path.dirname(require.resolve('@adcp/sdk/package.json')), 'dist', 'lib', 'schemas-data', '3.0');

const adcp3 = schemaSet('3.0', adcp3SchemaDir);

/** Tools the bundled 3.0 manifest names. */
export const adcp3ToolNames = (): string[] => adcp3.toolNames();

/** Validates against one schema, named by its path under the 3.0 folder (`core/error.json`). */
export const validateAdcp3 = (schema: string, body: unknown): Adcp3Validation => adcp3.validate(schema, body);

/** A tool's answer against its 3.0 response schema (a pending answer against its status's schema). */
export const validateAdcp3Response = (toolName: string, body: unknown): Adcp3Validation => adcp3.validateResponse(toolName, body);

/** A tool's request against its 3.0 request schema. */
export const validateAdcp3Request = (toolName: string, body: unknown): Adcp3Validation => adcp3.validateRequest(toolName, body);
