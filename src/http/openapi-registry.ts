/**
 * The registry's REST paths in the OpenAPI document (spec §2.1–2.5, §4.1–4.3). Hand-written JSON
 * Schema: these bodies are built by the handlers, not parsed from zod.
 */
const registryError = { type: 'object', required: ['error'], properties: { error: { type: 'string' } } };
const rateLimited = { type: 'object', required: ['error', 'retry_after'], properties: { error: { type: 'string' }, retry_after: { type: 'integer', minimum: 1 } } };
const json = (schema: unknown) => ({ 'application/json': { schema } });

const revalidation = {
  type: 'object',
  required: ['domain', 'adagents_valid', 'checked_at', 'discovery_method', 'authority'],
  properties: {
    domain: { type: 'string' },
    adagents_valid: { type: 'boolean' },
    checked_at: { type: 'string', format: 'date-time' },
    error: { type: 'string', description: 'The first error, when the file is not valid' },
    issues: {
      type: 'object',
      required: ['errors', 'warnings'],
      properties: {
        errors: { type: 'array', items: { type: 'object', required: ['field', 'message', 'severity'], properties: { field: { type: 'string' }, message: { type: 'string' }, severity: { type: 'string', enum: ['error'] } } } },
        warnings: { type: 'array', items: { type: 'object', required: ['field', 'message'], properties: { field: { type: 'string' }, message: { type: 'string' }, suggestion: { type: 'string' } } } },
      },
    },
    properties_count: { type: 'integer', minimum: 0 },
    authorized_agents_count: { type: 'integer', minimum: 0 },
    status_code: { type: 'integer', minimum: 100, maximum: 599 },
    response_bytes: { type: 'integer', minimum: 0 },
    resolved_url: { type: 'string' },
    discovery_method: {
      type: 'string',
      enum: ['direct', 'authoritative_location', 'ads_txt_manager'],
      description: 'How the file was found: at /.well-known/adagents.json, through its authoritative_location, or at the manager its ads.txt MANAGERDOMAIN names',
    },
    authority: {
      type: 'string',
      enum: ['domain', 'adagents_authoritative'],
      description: 'Whose authority the file carries: the publisher domain itself, or a manager’s adagents.json that explicitly scopes this publisher',
    },
    manager_domain: { type: 'string', description: 'The ads.txt manager, when discovery_method is ads_txt_manager' },
  },
};

export const registryPaths: Record<string, unknown> = {
  '/api/storyboards/{id}': {
    get: {
      operationId: 'getStoryboard',
      tags: ['Agent Compliance'],
      summary: 'A compliance storyboard with its phases and steps, and its test kit when it names one',
      parameters: [
        { name: 'id', in: 'path', required: true, schema: { type: 'string', maxLength: 256 }, description: 'Storyboard id; ids with / are URL-encoded' },
        { name: 'compliance_target', in: 'query', required: false, schema: { type: 'string' }, description: '3.1, 3.0, 3.1-rc, 3.1-beta or an exact bundled version' },
      ],
      responses: {
        200: { description: 'The storyboard', content: json({ type: 'object', required: ['adcp_version', 'requested_compliance_target', 'storyboard'], properties: { adcp_version: { type: 'string' }, requested_compliance_target: { type: 'string' }, storyboard: { type: 'object' }, test_kit: {} } }) },
        400: { description: 'Unresolvable compliance_target, or an id over 256 characters', content: json(registryError) },
        404: { description: 'Storyboard not found', content: json(registryError) },
        500: { description: 'A bundle that could not be read', content: json(registryError) },
      },
    },
  },
  '/api/registry/publisher/{domain}/adagents/revalidate': {
    post: {
      operationId: 'revalidatePublisherAdagents',
      tags: ['Authorization Lookups'],
      summary: 'Fetch and validate a publisher’s adagents.json now (admin). Once per 5 minutes per domain, 30 per admin per hour.',
      security: [{ bearer: [] }, { oauth2: [] }],
      parameters: [
        { name: 'domain', in: 'path', required: true, schema: { type: 'string', maxLength: 253 } },
        { name: 'force', in: 'query', required: false, schema: { type: 'string', enum: ['1', 'true'] } },
      ],
      responses: {
        200: { description: 'The verdict and fetch metadata', content: json(revalidation) },
        400: { description: 'Invalid domain (IP literal, port, single label, over 253 characters) or one resolving to a private address', content: json(registryError) },
        401: { description: 'No valid Bearer credential', content: json(registryError) },
        403: { description: 'Not an admin', content: json(registryError) },
        429: { description: 'Rate limited (Retry-After header too)', content: json(rateLimited) },
      },
    },
  },
  '/api/registry/feed': {
    get: {
      operationId: 'getRegistryFeed',
      tags: ['Change Feed'],
      summary: 'Registry changes in a stable order (publisher.*, authorization.*, brand.*, storyboards.*). Any valid key.',
      security: [{ bearer: [] }, { oauth2: [] }],
      parameters: [
        { name: 'cursor', in: 'query', required: false, schema: { type: 'string', format: 'uuid' }, description: 'event_id of the last entry read' },
        { name: 'types', in: 'query', required: false, schema: { type: 'string' }, description: 'Comma-separated event types (at most 100); a trailing * matches a prefix' },
        { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 10000, default: 100 } },
      ],
      responses: {
        200: {
          description: 'A page of entries',
          content: json({
            type: 'object',
            required: ['events', 'cursor', 'has_more', 'freshness'],
            properties: {
              events: { type: 'array', items: { type: 'object', required: ['event_id', 'event_type', 'entity_type', 'entity_id', 'payload', 'actor', 'created_at'] } },
              cursor: { type: ['string', 'null'] },
              has_more: { type: 'boolean' },
              freshness: { type: 'object' },
            },
          }),
        },
        400: { description: 'Bad cursor, limit or type filter, or more than 100 type filters', content: json(registryError) },
        401: { description: 'No valid Bearer credential', content: json(registryError) },
        410: { description: 'Cursor unknown or past the 90-day retention', content: json(registryError) },
      },
    },
  },
  '/api/brands/resolve/bulk': {
    post: {
      operationId: 'resolveBrandsBulk',
      tags: ['Brand Resolution'],
      summary: 'Canonical brand identities for up to 100 domains (unknown → null, and crawled in the background in the caller’s share of the crawl queue). 20 requests a minute per client address.',
      requestBody: { required: true, content: json({ type: 'object', required: ['domains'], properties: { domains: { type: 'array', minItems: 1, maxItems: 100, items: { type: 'string' } } } }) },
      responses: {
        200: { description: 'results keyed by normalized domain', content: json({ type: 'object', required: ['results'], properties: { results: { type: 'object', additionalProperties: { oneOf: [{ type: 'object' }, { type: 'null' }] } } } }) },
        400: { description: 'Bad JSON, content type or domain list', content: json(registryError) },
        413: { description: 'Body over 16 KB', content: json(registryError) },
        429: { description: 'Rate limited, or past the caller’s share of the crawl queue (Retry-After header too)', content: json(rateLimited) },
        503: { description: 'The crawl queue is full: the unknown domains were not queued (Retry-After header too)', content: json(rateLimited) },
      },
    },
  },
};
