import fs from 'node:fs';
import path from 'node:path';
import proxyAddr from 'proxy-addr';
import { z } from 'zod';
import { parseOriginOverrides } from './shared/origin-overrides';
import { fieldPath } from './shared/field-path';

/**
 * The one place that reads process.env. Every key is documented in docs/configuration.md's
 * table with the same default; modules receive the parsed object, never the environment.
 */
/** Who a per-role limit is for: a key's role, or `anonymous` (counted per client address). */
export const LIMITED_ROLES = ['anonymous', 'buyer', 'seller', 'admin'] as const;
export type LimitedRole = (typeof LIMITED_ROLES)[number];

/** `anonymous=300,buyer=3000,…`: a positive integer per role; roles left out keep their default. */
function perRole(defaults: string) {
  const parse = (text: string) =>
    Object.fromEntries(
      text.split(',').map((pair) => {
        const [role, value] = pair.split('=').map((s) => s.trim());
        return [role, Number(value)];
      }),
    ) as Record<string, number>;
  return z
    .string()
    .regex(/^\s*(anonymous|buyer|seller|admin)\s*=\s*\d{1,9}\s*(,\s*(anonymous|buyer|seller|admin)\s*=\s*\d{1,9}\s*)*$/, {
      message: 'must be role=number pairs, e.g. anonymous=300,buyer=3000 (roles: anonymous, buyer, seller, admin)',
    })
    .refine((text) => Object.values(parse(text)).every((n) => n >= 1), { message: 'every limit must be at least 1' })
    .default(defaults)
    .transform((text) => ({ ...parse(defaults), ...parse(text) }) as Record<LimitedRole, number>);
}

const envSchema = z.object({
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(4000),
  DATA_DIR: z.string().min(1).default('./data'),
  EVENT_STORE_URL: z
    .string()
    .regex(/^(sqlite:|postgres:\/\/|postgresql:\/\/|kurrentdb(\+discover)?:\/\/|esdb(\+discover)?:\/\/|memory:)/, {
      message: 'must start with sqlite:, postgres://, kurrentdb:// or memory:',
    })
    .optional(),
  READ_MODEL_URL: z
    .string()
    .regex(/^(sqlite:|postgres:\/\/|postgresql:\/\/)/, { message: 'must start with sqlite: or postgres://' })
    .optional(),
  SQLITE_SYNCHRONOUS: z.enum(['FULL', 'NORMAL']).default('NORMAL'),
  KAFKA_BROKERS: z
    .string()
    .regex(/^[^\s,]+:\d+(,[^\s,]+:\d+)*$/, { message: 'must be host:port[,host:port…]' })
    .optional(),
  KAFKA_TOPIC: z.string().min(1).default('adcp.events'),
  KAFKA_FEED_TOPIC: z.string().min(1).default('adcp.registry.feed'),
  KAFKA_PUBLIC_TOPIC_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,200}$/, { message: 'must be 1-200 of A-Z a-z 0-9 . _ - (a Kafka topic name prefix)' })
    .default('adcp.public.'),
  KAFKA_CLIENT_ID: z.string().min(1).default('adcp-gateway'),
  PUBLIC_EVENTS_TENANT_SECRET_FILE: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
  CATALOG_FILE: z.string().min(1).optional(),
  APPROVAL_POLICY: z.enum(['rules', 'manual', 'never']).default('rules'),
  SANDBOX_APPROVAL_DELAY_MS: z.coerce.number().int().min(0).max(3_600_000).default(2000),
  FORWARD_AGENT_CREDENTIALS: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return new Map<string, string>();
      try {
        const parsed = JSON.parse(v) as unknown;
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
        const entries = Object.entries(parsed as Record<string, unknown>).map(([url, token]) => {
          if (typeof token !== 'string' || token.length === 0 || !URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) throw new Error(`bad entry for ${url}`);
          return [new URL(url).href, token] as const;
        });
        return new Map(entries);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: `must be a JSON object of agent URL → bearer token (${(err as Error).message})` });
        return z.NEVER;
      }
    }),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(120_000).default(10_000),
  PUBLIC_URL: z
    .string()
    .url()
    .regex(/^https?:\/\/[^/?#]+\/?$/, { message: 'must be an origin such as https://ads.example.com' })
    .optional(),
  REGISTRY_ORIGIN_OVERRIDES: z
    .string()
    .regex(/^[a-z0-9.-]+=https?:\/\/[^,\s]+(,[a-z0-9.-]+=https?:\/\/[^,\s]+)*$/, { message: 'must be domain=http://host:port[,…]' })
    .optional(),
  COMPLIANCE_DIRS: z.string().optional(),
  TRUST_PROXY: z
    .string()
    .regex(/^(true|false|\d{1,2}|[0-9a-fA-F.:/]+(,[0-9a-fA-F.:/]+)*)$/, { message: 'must be true, false, a hop count, or comma-separated proxy addresses/CIDRs' })
    .default('false'),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, { message: 'must be a redis:// or rediss:// URL' }).optional(),
  REDIS_KEY_PREFIX: z.string().min(1).default('adcp-gateway:'),
  BRAND_RESOLVE_RATE_LIMIT: z.coerce.number().int().min(1).max(1_000_000).default(20),
  METRICS_TOKEN: z.string().regex(/^[\x21-\x7e]{32,}$/, { message: 'must be at least 32 visible ASCII characters (a bearer token)' }).optional(),
  RESOURCE_LIMITS: z.enum(['on', 'off']).default('on'),
  REQUESTS_PER_MINUTE: perRole('anonymous=300,buyer=3000,seller=3000,admin=6000'),
  GRAPHQL_MAX_COST: z.coerce.number().int().min(10).max(1_000_000).default(1000),
  GRAPHQL_POINTS_PER_MINUTE: perRole('anonymous=5000,buyer=50000,seller=50000,admin=100000'),
  GRAPHQL_MAX_DEPTH: z.coerce.number().int().min(2).max(64).default(10),
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(30),
  WEBHOOK_REQUESTS_PER_MINUTE: z.coerce.number().int().min(1).max(100_000_000).default(3000),
  WEBHOOK_NONCES_PER_KEY: z.coerce.number().int().min(1).max(100_000_000).default(100_000),
  WEBHOOK_ACCEPTED_PER_DAY: z.coerce.number().int().min(1).max(100_000_000).default(100_000),
  MAX_RESPONSE_BYTES: z.coerce.number().int().min(4096).max(256 * 1024 * 1024).default(8 * 1024 * 1024),
  REQUEST_TIME_BUDGET_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  ALLOW_PRIVATE_WEBHOOK_URLS: z.enum(['0', '1']).default('0'),
  WEBHOOK_KEY_PURPOSE: z.enum(['request-signing', 'webhook-signing']).default('request-signing'),
  WEBHOOK_SIGNING_KEYS_FILE: z.string().min(1).optional(),
  REQUEST_SIGNERS_FILE: z.string().min(1).optional(),
  WEBHOOK_SIGNING_KEYS: z
    .string()
    .refine((s) => {
      try {
        return Array.isArray((JSON.parse(s) as { keys?: unknown }).keys);
      } catch {
        return false;
      }
    }, { message: 'must be a JWK set ({"keys":[…]}) with private members' })
    .optional(),
  OAUTH_ISSUER: z.string().url().regex(/^https?:\/\/[^?#]+$/, { message: 'must be an issuer URL without query or fragment' }).optional(),
  OAUTH_JWKS_URI: z.string().url().optional(),
  OAUTH_AUDIENCE: z.string().min(1).optional(),
  OAUTH_ALGORITHMS: z
    .string()
    .regex(/^(EdDSA|ES256|ES384|RS256|RS384|RS512|PS256|PS384|PS512)(,(EdDSA|ES256|ES384|RS256|RS384|RS512|PS256|PS384|PS512))*$/, {
      message: 'must be a comma-separated list of asymmetric JWS algorithms (EdDSA, ES256, RS256, …)',
    })
    .default('EdDSA,ES256,RS256'),
  OAUTH_ADMIN_CLAIM: z.string().regex(/^[\w:./-]+=[^=]+$/, { message: 'must be claim=value, e.g. adcp_role=admin' }).default('adcp_role=admin'),
  OAUTH_ACCESS_TOKEN_TTL: z.coerce.number().int().min(60).max(86_400).default(900),
  OAUTH_SIGNING_KEYS_FILE: z.string().min(1).optional(),
  // OpenTelemetry's own keys: read here only to decide whether tracing is on (the SDK reads the rest).
  OTEL_SDK_DISABLED: z.enum(['true', 'false', 'TRUE', 'FALSE', '']).optional(),
  OTEL_TRACES_EXPORTER: z.string().optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().optional(),
  OTEL_SERVICE_NAME: z.string().min(1).default('adcp-gateway'),
  // Ours, not OpenTelemetry's: whose `traceparent` a request span continues.
  TRUST_TRACE_CONTEXT: z
    .string()
    .regex(/^(true|false|[0-9a-fA-F.:/]+(,[0-9a-fA-F.:/]+)*)$/, { message: 'must be true, false, or comma-separated caller addresses/CIDRs' })
    .refine((v) => v === 'true' || v === 'false' || compiles(v), { message: 'must be true, false, or comma-separated caller addresses/CIDRs' })
    .default('false'),
});

/** Whether proxy-addr takes a comma-separated address/CIDR list (`10.0.0.0/99` passes the pattern, not this). */
function compiles(list: string): boolean {
  try {
    proxyAddr.compile(list.split(',').map((s) => s.trim()));
    return true;
  } catch {
    return false;
  }
}

/** Off by default: tracing starts when the environment names somewhere to send spans. */
function tracingWanted(e: z.infer<typeof envSchema>): boolean {
  if (e.OTEL_SDK_DISABLED?.toLowerCase() === 'true') return false;
  const exporters = (e.OTEL_TRACES_EXPORTER ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (exporters.length > 0) return !exporters.includes('none');
  return Boolean(e.OTEL_EXPORTER_OTLP_ENDPOINT || e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

export type EventStoreKind = 'sqlite' | 'postgres' | 'kurrentdb' | 'memory';

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  eventStore: { kind: EventStoreKind; url: string; sqliteFile?: string };
  readModel: { kind: 'sqlite' | 'postgres'; url: string; sqliteFile?: string };
  sqliteSynchronous: 'FULL' | 'NORMAL';
  kafka?: { brokers: string[]; topic: string; feedTopic: string; publicTopicPrefix: string; clientId: string };
  logLevel: string;
  /**
   * OpenTelemetry tracing: on when OTEL_TRACES_EXPORTER names an exporter (other than `none`) or an
   * OTLP endpoint is set, unless OTEL_SDK_DISABLED=true. Off by default.
   */
  tracing: { enabled: boolean; serviceName: string };
  /**
   * Whose inbound `traceparent` a request's span continues: nobody's (false, the default: a new
   * trace, the caller's span kept as a link), everyone's (true), or callers whose socket address
   * is in a comma-separated list of addresses/CIDRs.
   */
  trustTraceContext: boolean | string;
  bodyLimitBytes: number;
  shutdownGraceMs: number;
  /** The operator's catalog file; unset → the demo catalog. */
  catalogFile?: string;
  /** rules: per-product flag and the catalog's budget threshold; manual: always; never. */
  approvalPolicy: 'rules' | 'manual' | 'never';
  /** How long the simulated seller takes to approve a sandbox account's submitted buy. */
  sandboxApprovalDelayMs: number;
  /** Agents call_adcp_agent may forward to, by agent URL, with the bearer token to present. */
  forwardAgentCredentials: ReadonlyMap<string, string>;
  /** The origin buyers reach this gateway at (brand.json, jwks_uri); unset → taken from each request. */
  publicUrl?: string;
  /** Test seam: webhooks may go to loopback / private addresses (and plain http). */
  allowPrivateWebhookUrls: boolean;
  /** Compliance bundle directories (each with an index.json) served besides the one @adcp/sdk ships. */
  complianceDirs: string[];
  /**
   * Which proxies may say who the client is (X-Forwarded-For): the client address that the rate
   * limits count by. false: the socket's peer; true: any; a number: that many hops; or addresses.
   */
  trustProxy: boolean | number | string;
  /** Where rate-limit counters live when not in the database. */
  redis?: { url: string; keyPrefix: string };
  /** Bulk brand resolutions per client address per minute (spec §8: 20). */
  brandResolveRateLimit: number;
  /** When set, /metrics answers only requests bearing this token (`Authorization: Bearer …`); unset, it is open. */
  metricsToken?: string;
  /** What one client may ask of this gateway (docs/limits.md); undefined: RESOURCE_LIMITS=off. */
  limits?: ResourceLimits;
  /** Test seam: live fetches (brand.json, JWKS, adagents.json) for these domains go to these origins. */
  originOverrides: ReadonlyMap<string, string>;
  /** Live nonces one sender key may hold at one receiver endpoint before its webhooks are refused (rate_abuse). */
  webhookNoncesPerKey: number;
  /** Webhooks the receiver accepts per dedup scope (a legacy endpoint, or an RFC 9421 signing key) per UTC day before 429. */
  webhookAcceptedPerDay: number;
  webhookSigning: { purpose: 'request-signing' | 'webhook-signing'; keysFile: string; inlineKeys?: string };
  /**
   * The secret the public events' tenant keys are an HMAC under (docs/events.md, "Tenants"):
   * created on first start; every instance, and `events tail`, must share it.
   */
  publicEventsTenantSecretFile: string;
  /** Buyers whose agents sign their calls (RFC 9421), and which calls must be signed; unset: not offered. */
  requestSignersFile?: string;
  oauth: OAuthConfig;
}

/**
 * User JWTs (spec §5.1). With `issuer` unset the gateway is its own authorization server
 * (authorization code + PKCE, signing with `keysFile`); with it set, tokens come from that issuer
 * and are checked against its JWKS (`jwksUri`, else the one its metadata names).
 */
export interface OAuthConfig {
  issuer?: string;
  jwksUri?: string;
  /** Accepted `aud` values; unset → `<origin>/api` and `<origin>/mcp` of this gateway. */
  audiences?: string[];
  algorithms: string[];
  /** A token whose `claim` equals `value` (or is an array holding it) is an administrator's. */
  adminClaim: { claim: string; value: string };
  accessTokenTtlSeconds: number;
  keysFile: string;
}

/**
 * Per-client limits, the same on every instance (their counters live in the shared rate-limit
 * store). Per role: a key's role, or `anonymous` per client address.
 */
export interface ResourceLimits {
  requestsPerMinute: Record<LimitedRole, number>;
  graphql: {
    /** The most one operation may cost (points: see src/graphql/cost.ts). */
    maxCost: number;
    /** Points each principal may spend per minute. */
    pointsPerMinute: Record<LimitedRole, number>;
    /** The deepest selection nesting an operation may have. */
    maxDepth: number;
  };
  /** Requests with a credential that fails to verify, per client address per minute. */
  authFailuresPerMinute: number;
  /** Requests to the webhook receiver (`/webhooks/*`) per sender address per minute. */
  webhookRequestsPerMinute: number;
  /** The largest answer any binding sends; above it the client gets an error asking for less. */
  maxResponseBytes: number;
  /** How long a request may take before it is answered 503 (its work is abandoned where it waits). */
  requestTimeBudgetMs: number;
}

/** Raised for a bad environment; the CLI prints its message on one line and exits 1. */
export class ConfigError extends Error {}

/** A JSON file a setting names, checked by `schema`; a bad one is a ConfigError naming the setting, the file and the field. */
export function readConfigFile<T>(setting: string, file: string, schema: z.ZodType<T>): T {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`${setting} ${file}: ${(err as Error).message}`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`${setting} ${file}: ${fieldPath(issue.path) || '(root)'}: ${issue.message}`);
  }
  return parsed.data;
}

function kindOf(url: string): EventStoreKind {
  if (url.startsWith('sqlite:')) return 'sqlite';
  if (url.startsWith('postgres')) return 'postgres';
  if (url.startsWith('memory:')) return 'memory';
  return 'kurrentdb';
}

function sqliteFile(url: string): string {
  return path.resolve(url.slice('sqlite:'.length));
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable means "unset", as in most twelve-factor tools.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = issue.path.join('.') || '(environment)';
    throw new ConfigError(`invalid configuration: ${key}: ${issue.message} (got ${JSON.stringify(env[key] ?? null)})`);
  }
  const e = parsed.data;
  if (e.TRUST_PROXY !== 'false' && !e.PUBLIC_URL) {
    // Trusted proxies also name the Host (X-Forwarded-Host): the origin in brand.json, jwks_uri and
    // signature targets must then be configured, not taken from a header a client can send.
    throw new ConfigError('invalid configuration: TRUST_PROXY: needs PUBLIC_URL (behind a proxy the public origin must be configured)');
  }
  const dataDir = path.resolve(e.DATA_DIR);
  const esUrl = e.EVENT_STORE_URL ?? `sqlite:${path.join(dataDir, 'adcp.sqlite')}`;
  const esKind = kindOf(esUrl);
  // Read models live beside the events when the store speaks SQL, so a projection's rows and
  // its checkpoint commit in one transaction; KurrentDB and memory stores keep them in SQLite.
  const rmUrl =
    e.READ_MODEL_URL ??
    (esKind === 'sqlite' || esKind === 'postgres' ? esUrl : `sqlite:${path.join(dataDir, 'read-models.sqlite')}`);
  const rmKind = rmUrl.startsWith('sqlite:') ? 'sqlite' : 'postgres';

  return {
    host: e.HOST,
    port: e.PORT,
    dataDir,
    eventStore: { kind: esKind, url: esUrl, ...(esKind === 'sqlite' ? { sqliteFile: sqliteFile(esUrl) } : {}) },
    readModel: { kind: rmKind, url: rmUrl, ...(rmKind === 'sqlite' ? { sqliteFile: sqliteFile(rmUrl) } : {}) },
    sqliteSynchronous: e.SQLITE_SYNCHRONOUS,
    kafka: e.KAFKA_BROKERS
      ? { brokers: e.KAFKA_BROKERS.split(','), topic: e.KAFKA_TOPIC, feedTopic: e.KAFKA_FEED_TOPIC, publicTopicPrefix: e.KAFKA_PUBLIC_TOPIC_PREFIX, clientId: e.KAFKA_CLIENT_ID }
      : undefined,
    logLevel: e.LOG_LEVEL,
    tracing: { enabled: tracingWanted(e), serviceName: e.OTEL_SERVICE_NAME },
    trustTraceContext: e.TRUST_TRACE_CONTEXT === 'true' ? true : e.TRUST_TRACE_CONTEXT === 'false' ? false : e.TRUST_TRACE_CONTEXT,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    approvalPolicy: e.APPROVAL_POLICY,
    sandboxApprovalDelayMs: e.SANDBOX_APPROVAL_DELAY_MS,
    forwardAgentCredentials: e.FORWARD_AGENT_CREDENTIALS,
    catalogFile: e.CATALOG_FILE ? path.resolve(e.CATALOG_FILE) : undefined,
    publicUrl: e.PUBLIC_URL?.replace(/\/$/, ''),
    allowPrivateWebhookUrls: e.ALLOW_PRIVATE_WEBHOOK_URLS === '1',
    trustProxy: e.TRUST_PROXY === 'true' ? true : e.TRUST_PROXY === 'false' ? false : /^\d+$/.test(e.TRUST_PROXY) ? Number(e.TRUST_PROXY) : e.TRUST_PROXY,
    ...(e.REDIS_URL ? { redis: { url: e.REDIS_URL, keyPrefix: e.REDIS_KEY_PREFIX } } : {}),
    brandResolveRateLimit: e.BRAND_RESOLVE_RATE_LIMIT,
    ...(e.METRICS_TOKEN ? { metricsToken: e.METRICS_TOKEN } : {}),
    ...(e.RESOURCE_LIMITS === 'on'
      ? {
          limits: {
            requestsPerMinute: e.REQUESTS_PER_MINUTE,
            graphql: { maxCost: e.GRAPHQL_MAX_COST, pointsPerMinute: e.GRAPHQL_POINTS_PER_MINUTE, maxDepth: e.GRAPHQL_MAX_DEPTH },
            authFailuresPerMinute: e.AUTH_FAILURES_PER_MINUTE,
            webhookRequestsPerMinute: e.WEBHOOK_REQUESTS_PER_MINUTE,
            maxResponseBytes: e.MAX_RESPONSE_BYTES,
            requestTimeBudgetMs: e.REQUEST_TIME_BUDGET_MS,
          },
        }
      : {}),
    complianceDirs: (e.COMPLIANCE_DIRS ?? '').split(',').map((d) => d.trim()).filter(Boolean).map((d) => path.resolve(d)),
    originOverrides: parseOriginOverrides(e.REGISTRY_ORIGIN_OVERRIDES),
    webhookNoncesPerKey: e.WEBHOOK_NONCES_PER_KEY,
    webhookAcceptedPerDay: e.WEBHOOK_ACCEPTED_PER_DAY,
    publicEventsTenantSecretFile: path.resolve(e.PUBLIC_EVENTS_TENANT_SECRET_FILE ?? path.join(dataDir, 'public-events-tenant-secret')),
    webhookSigning: {
      purpose: e.WEBHOOK_KEY_PURPOSE,
      keysFile: path.resolve(e.WEBHOOK_SIGNING_KEYS_FILE ?? path.join(dataDir, 'webhook-signing-keys.json')),
      inlineKeys: e.WEBHOOK_SIGNING_KEYS,
    },
    ...(e.REQUEST_SIGNERS_FILE ? { requestSignersFile: path.resolve(e.REQUEST_SIGNERS_FILE) } : {}),
    oauth: {
      issuer: e.OAUTH_ISSUER,
      jwksUri: e.OAUTH_JWKS_URI,
      audiences: e.OAUTH_AUDIENCE?.split(',').map((a) => a.trim()).filter(Boolean),
      algorithms: e.OAUTH_ALGORITHMS.split(','),
      adminClaim: { claim: e.OAUTH_ADMIN_CLAIM.split('=')[0]!, value: e.OAUTH_ADMIN_CLAIM.slice(e.OAUTH_ADMIN_CLAIM.indexOf('=') + 1) },
      accessTokenTtlSeconds: e.OAUTH_ACCESS_TOKEN_TTL,
      keysFile: path.resolve(e.OAUTH_SIGNING_KEYS_FILE ?? path.join(dataDir, 'oauth-signing-keys.json')),
    },
  };
}
