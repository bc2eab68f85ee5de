import 'reflect-metadata';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { SingleBar } from 'cli-progress';
import { allProjections } from '../projections';
import { apiKeyQueries } from '../projections/api-keys';
import { SigningKeystore } from './signing/keystore';
import { issueApiKey, revokeApiKey } from './application/api-keys';
import { openEventStore, openReadModels, openStoreAdapter } from './app';
import { ConfigError, loadConfig, type Config } from './config';
import { ROLES, type Role } from './domain/api-key/api-key';
import { printGatewaySchema } from './graphql/schema';
import { printOpenApi } from './http/openapi';
import { startGateway } from './main';
import { breakingChanges } from './public-events/compatibility';
import { asyncApiDocument, eventSchemaFiles } from './public-events/documents';
import { tailPublicEvents } from './public-events/tail';
import { storeAttribution } from './public-events/mapping';
import { loadTenantSecret, tenantKeyer } from './public-events/tenants';
import { selectTypes } from './public-events/types';
import type { EventStore } from './eventstore/port';
import { statementsFor, type Projection } from './projections/projection';
import { PROJECTIONS_STREAM, ProjectionRunner, failureCheckpoint, rebuildBeside, type ProjectionFailure } from './projections/runner';
import type { ReadModelStore } from './readmodel/port';
import { shadowCheckpointName } from './projections/shadow';
import { AppError } from './shared/errors';

const USAGE = `usage: adcp-gateway <command>

  serve                                   start the gateway (HTTP, projections, consumers)
  projections rebuild [name]              replay read models from position 0 (all, or one)
  projections status                      each projection's checkpoint against the log head
  keys create --org <name> [--role buyer|seller|admin]
                                          issue an API key; prints the sk_… key once
  keys list                               issued keys (never the secrets)
  keys revoke <key-id>                    revoke a key
  keys rotate [--alg ed25519|ecdsa-p256-sha256]
                                          new webhook-signing key (prints its kid)
  schema [--check] [--dir <path>]         write schema/schema.graphql, schema/openapi.json, schema/asyncapi.yaml
                                          and schema/events/*.json (or fail if any is stale); refuses a
                                          breaking change to a published event schema in either mode
  events tail [--type <t>[,<t>…]] [--from <position>] [--follow]
                                          print the public event stream from the log (CloudEvents JSON
                                          lines, each checked against its schema); --type takes a name
                                          (media_buy.status_changed), a versioned one (…v1) or a domain
  webhooks verify --jwks <file> [--now <unix>]
                                          check a signed webhook ({"method","url","headers","body"} on stdin)
  log export [--from <url>] [--to <file>|-]
                                          the event log as NDJSON, with its digest (default: stdout)
  log import <file> [--to <url>] [--read-models <url>]
                                          a log file into an empty store (ids, versions, order kept; its
                                          side effects recorded as done in the target's read models)
  log copy --from <url> --to <url> [--read-models <url>]
                                          one store's log into another, empty one (SQLite → PostgreSQL)
  backup <file>                           online backup of the SQLite store (consistent under writes)
  restore <file>                          a backup into the configured SQLite store's place (gateway stopped)
  bench                                   run the benchmarks (JSON lines)
  conformance [--protocol mcp|a2a] [--url <gateway>] [--storyboards a,b] [--token <key>] [--json]
                                          run the official AdCP storyboards against a running
                                          gateway and print the results (--help for more)

Configuration comes from the environment; see README.md.`;

class UsageError extends Error {}

const cliContext = () => ({ now: new Date().toISOString(), principal: 'cli' });

/** Applies the log to every read model, then stops: for commands that read projections. */
async function withCaughtUpReadModels<T>(config: Config, fn: (rm: Awaited<ReturnType<typeof openReadModels>>) => Promise<T>) {
  const store = await openEventStore(config);
  const rm = await openReadModels(config);
  const runner = new ProjectionRunner(store, rm, allProjections);
  try {
    await runner.start();
    const head = await store.headPosition();
    const deadline = Date.now() + 60_000;
    // A changed projection is rebuilt beside its stale rows: wait for the switch too.
    while (!(runner.caughtUpWith(head) && runner.rebuilding().length === 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return await fn(rm);
  } finally {
    await runner.stop();
    await rm.close();
    await store.close();
  }
}

async function serve(config: Config): Promise<void> {
  const gw = await startGateway(config);
  const shutdown = () => void gw.stop().then(() => process.exit(0));
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

/**
 * The event a gateway's runner recorded as stopping this projection, while the projection is not
 * past it; the error is the projection's code run on it again here.
 */
async function failureOf(store: EventStore, rm: ReadModelStore, p: Projection, at: number): Promise<ProjectionFailure | undefined> {
  const position = (await rm.getCheckpoint(failureCheckpoint(p.name))).position;
  if (position <= at) return undefined;
  const [e] = await store.readAll({ fromPosition: position, limit: 1 });
  if (!e || e.position !== position) return undefined;
  try {
    statementsFor(p, [e]);
    return { position, type: e.type, error: 'applies here now (the gateway retries it when it restarts)' };
  } catch (err) {
    return { position, type: e.type, error: (err as Error).message };
  }
}

async function projectionsCommand(config: Config, args: string[]): Promise<void> {
  const [sub, name] = args;
  if (sub === 'status') {
    const store = await openEventStore(config);
    const rm = await openReadModels(config);
    const head = await store.headPosition();
    for (const p of allProjections) {
      const cp = await rm.getCheckpoint(p.name);
      // A stored version other than the code's: a server rebuilds it beside (its rows are stale).
      const shadow = cp.position > 0 && cp.version !== p.version ? { rebuilding: { version: p.version, position: (await rm.getCheckpoint(shadowCheckpointName(p))).position } } : {};
      const failed = await failureOf(store, rm, p, cp.position);
      process.stdout.write(JSON.stringify({ name: p.name, position: cp.position, head, lag: head - cp.position, ...shadow, ...(failed ? { failed } : {}) }) + '\n');
    }
    await rm.close();
    await store.close();
    return;
  }
  if (sub !== 'rebuild') throw new UsageError('projections: expected "rebuild [name]" or "status"');
  const chosen = name ? allProjections.filter((p) => p.name === name) : allProjections;
  if (chosen.length === 0) {
    throw new UsageError(`unknown projection "${name}"; known: ${allProjections.map((p) => p.name).join(', ')}`);
  }
  const store = await openEventStore(config);
  const rm = await openReadModels(config);
  try {
    for (const p of chosen) {
      const head = await store.headPosition();
      const bar = new SingleBar({
        format: `${p.name.padEnd(16)} [{bar}] {percentage}% | {value}/{total} events | {rate} ev/s | ETA {eta}s`,
        stream: process.stderr,
        hideCursor: true,
      });
      bar.start(Math.max(head, 1), 0, { rate: 0 });
      const started = Date.now();
      const result = await rebuildBeside(store, rm, p, (_pos, total, applied) => {
        const rate = Math.round(applied / Math.max(0.001, (Date.now() - started) / 1000));
        bar.setTotal(Math.max(total, applied));
        bar.update(applied, { rate });
      });
      bar.stop();
      const seconds = (Date.now() - started) / 1000;
      process.stdout.write(
        JSON.stringify({ projection: p.name, events: result.events, position: result.position, seconds, events_per_second: Math.round(result.events / Math.max(seconds, 0.001)) }) + '\n',
      );
    }
    // A running server caches rows of these read models; the marker in the log tells it they
    // were rewritten under it. The rebuilt projections then step past the marker themselves.
    await store.append(PROJECTIONS_STREAM, [{ type: 'ProjectionsRebuilt', data: { projections: chosen.map((p) => p.name), at: new Date().toISOString() }, metadata: { principal: 'cli' } }]);
    const runner = new ProjectionRunner(store, rm, chosen);
    await runner.start();
    await runner.waitFor(await store.headPosition(), undefined, 30_000);
    await runner.stop();
  } finally {
    await rm.close();
    await store.close();
  }
}

async function keysCommand(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { org: { type: 'string' }, role: { type: 'string', default: 'buyer' }, alg: { type: 'string', default: 'ed25519' } },
  });
  const [sub, keyId] = positionals;
  if (sub === 'create') {
    if (!values.org) throw new UsageError('keys create: --org <name> is required');
    if (!ROLES.includes(values.role as Role)) throw new UsageError(`keys create: --role must be one of ${ROLES.join(', ')}`);
    const store = await openEventStore(config);
    try {
      const issued = await issueApiKey(store, { org: values.org, role: values.role as Role }, cliContext());
      process.stderr.write(`key ${issued.keyId} for ${issued.org} (${issued.role}); shown once, stored hashed:\n`);
      process.stdout.write(issued.key + '\n');
    } finally {
      await store.close();
    }
    return;
  }
  if (sub === 'list') {
    await withCaughtUpReadModels(config, async (rm) => {
      for (const r of await apiKeyQueries.list(rm)) {
        process.stdout.write(
          JSON.stringify({ key_id: r.key_id, org: r.org, role: r.role, prefix: `sk_${r.prefix}_…`, issued_at: r.issued_at, revoked_at: r.revoked_at }) + '\n',
        );
      }
    });
    return;
  }
  if (sub === 'revoke') {
    if (!keyId) throw new UsageError('keys revoke: <key-id> is required');
    const store = await openEventStore(config);
    try {
      await revokeApiKey(store, keyId, cliContext());
      process.stderr.write(`revoked ${keyId}\n`);
    } finally {
      await store.close();
    }
    return;
  }
  if (sub === 'rotate') {
    if (config.webhookSigning.inlineKeys) throw new UsageError('keys rotate: WEBHOOK_SIGNING_KEYS is set; rotate the keys where that value comes from');
    if (values.alg !== 'ed25519' && values.alg !== 'ecdsa-p256-sha256') throw new UsageError('keys rotate: --alg must be ed25519 or ecdsa-p256-sha256');
    const kid = SigningKeystore.rotate(config.webhookSigning.keysFile, values.alg);
    process.stderr.write(`webhook signing key ${kid} is now active; the previous keys stay published for 24 h\n`);
    process.stdout.write(kid + '\n');
    return;
  }
  throw new UsageError('keys: expected create, list, revoke or rotate');
}

async function eventsCommand(config: Config, args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'tail') throw new UsageError('events: expected "tail [--type <t>[,<t>…]] [--from <position>] [--follow]"');
  const { values } = parseArgs({ args: rest, options: { type: { type: 'string', multiple: true }, from: { type: 'string' }, follow: { type: 'boolean' } }, strict: true, allowPositionals: false });
  const selected = selectTypes((values.type ?? []).flatMap((t) => t.split(',')).map((t) => t.trim()).filter(Boolean));
  if ('unknown' in selected) throw new UsageError(`events tail: unknown type "${selected.unknown}"; see schema/asyncapi.yaml or docs/events.md`);
  const from = values.from ?? '0';
  if (!/^\d{1,15}$/.test(from)) throw new UsageError(`events tail: --from must be a log position (a whole number ≥ 0), got "${from}"`);
  const store = await openEventStore(config);
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const counts = await tailPublicEvents(
      store,
      storeAttribution(store, tenantKeyer(loadTenantSecret(config.publicEventsTenantSecretFile))),
      { from: Number(from), follow: values.follow ?? false, signal: stop.signal },
      selected.names,
      (line) => process.stdout.write(line + '\n'),
      (message) => process.stderr.write(`adcp-gateway: events tail: ${message}\n`),
    );
    return counts.invalid > 0 ? 1 : 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await store.close();
  }
}

async function schemaCommand(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { check: { type: 'boolean' }, dir: { type: 'string' } }, strict: true, allowPositionals: false });
  // --dir: another copy of schema/ (a release's published documents, a test's scratch copy).
  const dir = values.dir ? path.resolve(values.dir) : path.join(__dirname, '..', '..', 'schema');
  const files: [string, string][] = [
    [path.join(dir, 'schema.graphql'), await printGatewaySchema()],
    [path.join(dir, 'openapi.json'), printOpenApi()],
    [path.join(dir, 'asyncapi.yaml'), asyncApiDocument()],
    ...eventSchemaFiles().map(([name, text]): [string, string] => [path.join(dir, 'events', name), text]),
  ];
  // A published event schema (committed under its name and version) may only change compatibly:
  // anything else is a new version, whichever mode we are in.
  const breaking = eventSchemaFiles().flatMap(([name, text]) => {
    const file = path.join(dir, 'events', name);
    if (!fs.existsSync(file)) return [];
    const changes = breakingChanges(JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>, JSON.parse(text) as Record<string, unknown>);
    return changes.length ? [`schema/events/${name}: ${changes.join(', ')}`] : [];
  });
  if (breaking.length) {
    throw new UsageError(`breaking change to a published event schema; raise the type's version in src/public-events/types.ts instead:\n  ${breaking.join('\n  ')}`);
  }
  if (values.check) {
    const stale = files.filter(([file, text]) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '') !== text).map(([file]) => path.relative(dir, file));
    if (stale.length) throw new UsageError(`schema/${stale.join(' and schema/')} stale: run \`npm run schema\``);
    return;
  }
  fs.mkdirSync(path.join(dir, 'events'), { recursive: true });
  for (const [file, text] of files) {
    fs.writeFileSync(file, text);
    process.stderr.write(`wrote ${path.relative(process.cwd(), file)}\n`);
  }
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'serve':
        if (rest.length > 0) throw new UsageError(`serve takes no arguments (got ${rest.join(' ')}); it is configured by environment variables such as PORT and HOST (see the README)`);
        await serve(loadConfig());
        return -1; // keep running
      case 'projections':
        await projectionsCommand(loadConfig(), rest);
        return 0;
      case 'keys':
        await keysCommand(loadConfig(), rest);
        return 0;
      case 'schema':
        await schemaCommand(rest);
        return 0;
      case 'events':
        return await eventsCommand(loadConfig(), rest);
      case 'log':
      case 'backup':
      case 'restore': {
        const { backupCommand, logCommand, LogUsageError } = await import('./eventstore/log-commands');
        const { LogMoveError } = await import('./eventstore/log-file');
        try {
          const config = loadConfig();
          if (command === 'log') {
            return await logCommand(
              rest,
              config.eventStore,
              (url) => openStoreAdapter(loadConfig({ ...process.env, EVENT_STORE_URL: url })),
              // As a gateway on that store would resolve them, unless named.
              (url, readModels) => {
                const target = loadConfig({ ...process.env, EVENT_STORE_URL: url, ...(readModels ? { READ_MODEL_URL: readModels } : {}) });
                return () => openReadModels(target);
              },
            );
          }
          return await backupCommand(command, rest, config.eventStore);
        } catch (err) {
          if (err instanceof LogUsageError) throw new UsageError(err.message);
          if (err instanceof LogMoveError) {
            process.stderr.write(`adcp-gateway: ${err.message}\n`);
            return 1;
          }
          throw err;
        }
      }
      case 'webhooks': {
        const { webhooksVerifyCommand } = await import('./webhooks/receiver/verify-command');
        return await webhooksVerifyCommand(rest);
      }
      case 'bench': {
        const { BENCH_NAMES, runBenchmarks } = await import('../test/bench/run');
        const usage = `usage: adcp-gateway bench [name]  (runs every benchmark whose name contains it: ${BENCH_NAMES.join(', ')})`;
        if (rest.length === 1 && (rest[0] === '--help' || rest[0] === '-h')) {
          process.stdout.write(usage + '\n');
          return 0;
        }
        if (rest.length > 1 || rest.some((a) => a.startsWith('-'))) throw new UsageError(usage);
        const only = rest[0];
        if (only && !BENCH_NAMES.some((name) => name.includes(only))) throw new UsageError(`bench: nothing matches "${only}"; names: ${BENCH_NAMES.join(', ')}`);
        await runBenchmarks(rest);
        return 0;
      }
      case 'conformance': {
        const { ConformanceUsageError, conformanceCommand } = await import('./conformance/command');
        try {
          return await conformanceCommand(rest, undefined, loadConfig);
        } catch (err) {
          if (err instanceof ConformanceUsageError) throw new UsageError(err.message);
          throw err;
        }
      }
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(USAGE + '\n');
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command "${command}"\n\n${USAGE}`);
    }
  } catch (err) {
    if (err instanceof ConfigError || err instanceof UsageError) {
      process.stderr.write(`adcp-gateway: ${err.message}\n`);
      return err instanceof ConfigError ? 1 : 2;
    }
    if (err instanceof AppError) {
      process.stderr.write(`adcp-gateway: ${err.code}: ${err.message}\n`);
      return 1;
    }
    const e = err as { code?: string; message?: string; address?: string; port?: number };
    // node:util parseArgs: an unknown option or one missing its value is a usage error.
    if (e.code?.startsWith('ERR_PARSE_ARGS_')) {
      process.stderr.write(`adcp-gateway: ${e.message}\n`);
      return 2;
    }
    if (e.code === 'EADDRINUSE' || e.code === 'EACCES' || e.code === 'EADDRNOTAVAIL') {
      process.stderr.write(`adcp-gateway: cannot listen on ${e.address ?? 'the configured host'}:${e.port ?? '?'} (${e.code}); set PORT or HOST\n`);
      return 1;
    }
    // Unreachable engines are an operator problem, not a bug: one line, no stack.
    if (e.code === 'ECONNREFUSED' || e.code === 'ENOTFOUND' || e.code === '3D000' || e.code === '28P01') {
      process.stderr.write(`adcp-gateway: cannot reach the configured engine: ${e.message ?? e.code}\n`);
      return 1;
    }
    process.stderr.write(`adcp-gateway: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  }
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => {
    if (code >= 0) process.exit(code);
  });
}
