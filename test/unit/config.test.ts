import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';

describe('config', () => {
  it('defaults to embedded SQLite under ./data on 127.0.0.1:4000 with the embedded bus', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ host: '127.0.0.1', port: 4000, dataDir: path.resolve('data'), kafka: undefined });
    expect(c.eventStore).toEqual({ kind: 'sqlite', url: `sqlite:${path.resolve('data', 'adcp.sqlite')}`, sqliteFile: path.resolve('data', 'adcp.sqlite') });
    expect(c.readModel.kind).toBe('sqlite');
    expect(c.readModel.sqliteFile).toBe(c.eventStore.sqliteFile);
  });

  it('tracing is off by default and on when OTEL_* names an exporter or an OTLP endpoint, unless the SDK is disabled', () => {
    const on = (env: Record<string, string>) => loadConfig(env).tracing.enabled;
    expect(loadConfig({}).tracing).toEqual({ enabled: false, serviceName: 'adcp-gateway' });
    expect(on({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
    expect(on({ OTEL_TRACES_EXPORTER: 'console,otlp' })).toBe(true);
    expect(on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(on({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(on({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(false);
    expect(on({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(loadConfig({ OTEL_SERVICE_NAME: 'gw-eu' }).tracing.serviceName).toBe('gw-eu');
  });

  it('puts read models beside a PostgreSQL event store, and splits Kafka brokers', () => {
    const c = loadConfig({ EVENT_STORE_URL: 'postgres://u@db:5432/adcp', KAFKA_BROKERS: 'k1:9092,k2:9092' });
    expect(c.eventStore.kind).toBe('postgres');
    expect(c.readModel).toEqual({ kind: 'postgres', url: 'postgres://u@db:5432/adcp' });
    expect(c.kafka).toEqual({ brokers: ['k1:9092', 'k2:9092'], topic: 'adcp.events', feedTopic: 'adcp.registry.feed', publicTopicPrefix: 'adcp.public.', clientId: 'adcp-gateway' });
    expect(loadConfig({ KAFKA_BROKERS: 'k1:9092', KAFKA_PUBLIC_TOPIC_PREFIX: 'acme.events.' }).kafka?.publicTopicPrefix).toBe('acme.events.');
  });

  it('keeps read models in SQLite for a KurrentDB event store', () => {
    const c = loadConfig({ EVENT_STORE_URL: 'kurrentdb://localhost:2113?tls=false', DATA_DIR: '/tmp/x' });
    expect(c.eventStore.kind).toBe('kurrentdb');
    expect(c.readModel).toMatchObject({ kind: 'sqlite', sqliteFile: '/tmp/x/read-models.sqlite' });
  });

  it('keeps webhook signing keys under DATA_DIR unless told otherwise; PUBLIC_URL loses a trailing slash', () => {
    const c = loadConfig({ DATA_DIR: '/tmp/x', PUBLIC_URL: 'https://ads.example.com/' });
    expect(c.webhookSigning).toEqual({ purpose: 'request-signing', keysFile: '/tmp/x/webhook-signing-keys.json', inlineKeys: undefined });
    expect(c.publicUrl).toBe('https://ads.example.com');
  });

  it('OAuth: the embedded server by default; an outside issuer, audiences, algorithms and the admin claim when set', () => {
    const embedded = loadConfig({ DATA_DIR: '/tmp/x' }).oauth;
    expect(embedded).toEqual({
      issuer: undefined,
      jwksUri: undefined,
      audiences: undefined,
      algorithms: ['EdDSA', 'ES256', 'RS256'],
      adminClaim: { claim: 'adcp_role', value: 'admin' },
      accessTokenTtlSeconds: 900,
      keysFile: '/tmp/x/oauth-signing-keys.json',
    });
    const outside = loadConfig({ OAUTH_ISSUER: 'https://idp.example/tenant', OAUTH_AUDIENCE: 'https://a/api, https://a/mcp', OAUTH_ALGORITHMS: 'RS256', OAUTH_ADMIN_CLAIM: 'https://example.com/roles=admin' }).oauth;
    expect(outside).toMatchObject({ issuer: 'https://idp.example/tenant', audiences: ['https://a/api', 'https://a/mcp'], algorithms: ['RS256'], adminClaim: { claim: 'https://example.com/roles', value: 'admin' } });
  });

  it('TRUST_TRACE_CONTEXT: nobody by default; true, or caller addresses/CIDRs; anything else stops the start', () => {
    expect(loadConfig({}).trustTraceContext).toBe(false);
    expect(loadConfig({ TRUST_TRACE_CONTEXT: 'true' }).trustTraceContext).toBe(true);
    expect(loadConfig({ TRUST_TRACE_CONTEXT: '10.0.0.0/8,::1' }).trustTraceContext).toBe('10.0.0.0/8,::1');
    expect(() => loadConfig({ TRUST_TRACE_CONTEXT: 'yes' })).toThrow(/TRUST_TRACE_CONTEXT/);
    expect(() => loadConfig({ TRUST_TRACE_CONTEXT: '10.0.0.0/99' })).toThrow(/TRUST_TRACE_CONTEXT/);
  });

  it('TRUST_PROXY: a hop count, addresses, or true — and only with PUBLIC_URL', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '1', PUBLIC_URL: 'https://ads.example.com' }).trustProxy).toBe(1);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8,127.0.0.1', PUBLIC_URL: 'https://ads.example.com' }).trustProxy).toBe('10.0.0.0/8,127.0.0.1');
    expect(() => loadConfig({ TRUST_PROXY: 'true' })).toThrow(/TRUST_PROXY: needs PUBLIC_URL/);
  });

  it('Redis only when REDIS_URL is set, with a key prefix', () => {
    expect(loadConfig({}).redis).toBeUndefined();
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }).redis).toEqual({ url: 'redis://127.0.0.1:6379', keyPrefix: 'adcp-gateway:' });
  });

  it('treats empty variables as unset', () => {
    const c = loadConfig({ PORT: '', LOG_LEVEL: '' });
    expect(c.port).toBe(4000);
    expect(c.logLevel).toBe('info');
  });

  it.each([
    ['PORT', '70000'],
    ['PORT', 'x'],
    ['EVENT_STORE_URL', 'mongodb://x'],
    ['READ_MODEL_URL', 'kurrentdb://x'],
    ['SQLITE_SYNCHRONOUS', 'OFF'],
    ['BODY_LIMIT_BYTES', '10'],
    ['KAFKA_BROKERS', 'k1:9092,,k2'],
    ['KAFKA_PUBLIC_TOPIC_PREFIX', 'has space.'],
    ['SHUTDOWN_GRACE_MS', '-1'],
    ['PUBLIC_URL', 'https://ads.example.com/path'],
    ['WEBHOOK_KEY_PURPOSE', 'response-signing'],
    ['WEBHOOK_SIGNING_KEYS', 'not-json'],
    ['OAUTH_ISSUER', 'https://idp.example/#top'],
    ['OAUTH_ALGORITHMS', 'HS256'],
    ['OAUTH_ALGORITHMS', 'none'],
    ['OAUTH_ADMIN_CLAIM', 'admin'],
    ['OAUTH_ACCESS_TOKEN_TTL', '5'],
    ['REDIS_URL', 'http://127.0.0.1:6379'],
  ])('names the bad key %s=%s in one line', (key, value) => {
    let err: unknown;
    try {
      loadConfig({ [key]: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(new RegExp(`^invalid configuration: ${key}: .+ \\(got "${value}"\\)$`));
    expect((err as Error).message).not.toContain('\n');
  });
});

describe('authorization request checks', () => {
  it('compares resources in URL-normal form, and names what is wrong', () => {
    const { authorizationRequestProblem } = require('../../src/oauth/authorization-server') as typeof import('../../src/oauth/authorization-server');
    const ok = { response_type: 'code', code_challenge: 'abc', code_challenge_method: 'S256' };
    expect(authorizationRequestProblem({ ...ok, resource: 'https://api.example.com' }, ['https://api.example.com/'])).toBeUndefined();
    expect(authorizationRequestProblem({ ...ok, resource: 'https://other.example/' }, ['https://api.example.com/'])).toMatch(/resource must be one of/);
    expect(authorizationRequestProblem({ ...ok, resource: 'not a url' }, ['https://api.example.com/'])).toMatch(/resource/);
    expect(authorizationRequestProblem({ ...ok, state: ['a', 'b'] }, [])).toMatch(/state must be given once/);
    expect(authorizationRequestProblem({}, [])).toMatch(/response_type/);
  });
});
