import { z } from 'zod';
import { tasks } from '../application/tasks';
import { httpStatusOf } from '../shared/errors';
import { registryPaths } from './openapi-registry';

const errorSchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'string', enum: Object.keys(httpStatusOf) },
        message: { type: 'string' },
        field: { type: 'string', description: 'Path of the failing field, e.g. packages[0].budget' },
      },
    },
    context: { type: 'object', description: 'The request’s context, echoed' },
  },
};

const statusText: Record<number, string> = {
  400: 'Invalid parameters (malformed body, a required field missing)',
  401: 'Missing or invalid Bearer key (role buyer)',
  404: 'Unknown product_id, media_buy_id, creative_id or task_id',
  409: 'buyer_ref already used, or idempotency_key reused with another payload',
  422: 'Schema validation failure, or a transition the current status does not allow',
};

/** The REST shim's OpenAPI 3.1 document, generated from the same zod schemas that validate requests. */
export function buildOpenApi(): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const [name, task] of Object.entries(tasks).sort(([a], [b]) => a.localeCompare(b))) {
    paths[`/api/tasks/${name}`] = {
      post: {
        operationId: name,
        summary: task.description,
        tags: ['Media-buy tasks'],
        security: [{ bearer: [] }],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: z.toJSONSchema(task.input, { io: 'input', unrepresentable: 'any' }) } },
        },
        responses: {
          200: { description: 'The task result', content: { 'application/json': { schema: { type: 'object' } } } },
          ...Object.fromEntries(
            Object.entries(statusText).map(([status, description]) => [status, { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }]),
          ),
        },
      },
    };
  }
  const codes = Object.entries(httpStatusOf).map(([code, status]) => `\`${code}\` → ${status}`).join(', ');
  return {
    openapi: '3.1.0',
    info: {
      title: 'adcp-gateway REST API',
      version: '1.0.0',
      description: `The AdCP media-buy tasks as JSON over HTTP. Unknown request fields are accepted; a top-level \`context\` is echoed. Error codes: ${codes}.`,
    },
    paths: {
      ...paths,
      ...registryPaths,
      '/healthz': { get: { summary: 'Liveness', responses: { 200: { description: 'Up' } } } },
      '/readyz': { get: { summary: 'Readiness: every projection caught up (one stopped by an event it cannot apply is named in `failed`, status `degraded`)', responses: { 200: { description: 'Ready' }, 503: { description: 'Catching up' } } } },
      '/metrics': { get: { summary: 'Prometheus metrics', responses: { 200: { description: 'Text exposition format' } } } },
      '/.well-known/oauth-protected-resource/api': { get: { summary: 'RFC 9728 protected-resource metadata for the registry API', responses: { 200: { description: '{resource, authorization_servers, bearer_methods_supported, scopes_supported}' } } } },
      '/.well-known/oauth-authorization-server': { get: { summary: 'RFC 8414 authorization-server metadata (embedded server; 404 when OAUTH_ISSUER is set)', responses: { 200: { description: 'Metadata' }, 404: { description: 'An outside issuer is configured' } } } },
      '/graphql': { post: { summary: 'The GraphQL API (schema/schema.graphql)', responses: { 200: { description: 'GraphQL response' } } } },
    },
    components: {
      schemas: { Error: errorSchema },
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An sk_ API key (adcp-gateway keys create), or a user JWT from the OAuth 2.1 authorization code flow with PKCE' },
        oauth2: {
          type: 'oauth2',
          description: 'The embedded authorization server (or OAUTH_ISSUER): discovery at /.well-known/oauth-authorization-server, dynamic registration at /register',
          flows: { authorizationCode: { authorizationUrl: '/authorize', tokenUrl: '/token', refreshUrl: '/token', scopes: { openid: 'the user', profile: 'the user', email: 'the user' } } },
        },
      },
    },
  };
}

export const printOpenApi = (): string => JSON.stringify(buildOpenApi(), null, 2) + '\n';

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** A self-contained docs page (no CDN): each task, its summary and its request schema. */
export function docsPage(): string {
  const doc = buildOpenApi() as { info: { description: string }; paths: Record<string, { post?: { summary: string; requestBody?: { content: { 'application/json': { schema: unknown } } } } }> };
  const sections = Object.entries(doc.paths)
    .filter(([, p]) => p.post?.requestBody)
    .map(
      ([path, p]) =>
        `<section><h2><code>POST ${escape(path)}</code></h2><p>${escape(p.post!.summary)}</p><details><summary>Request schema</summary><pre>${escape(
          JSON.stringify(p.post!.requestBody!.content['application/json'].schema, null, 2),
        )}</pre></details></section>`,
    )
    .join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>adcp-gateway API</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}pre{background:#f5f5f5;padding:1rem;overflow:auto}code{font-size:.95em}</style></head>
<body><h1>adcp-gateway REST shim</h1><p>${escape(doc.info.description)}</p><p>Machine-readable: <a href="/openapi.json">/openapi.json</a>. GraphQL: <code>POST /graphql</code>.</p>
${sections}</body></html>`;
}
