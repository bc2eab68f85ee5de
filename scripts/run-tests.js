#!/usr/bin/env node
// `npm test`: build, find the real engines, run Jest, and end with one line `N passed, N failed`.
//
// - PostgreSQL: TEST_PG_URL, else the machine's server at 127.0.0.1:5432 (trust auth) if it answers.
// - Redis: TEST_REDIS_URL, else the machine's server at 127.0.0.1:6379 if it answers PING.
// - Kafka: KAFKA_BROKERS, else scripts/kafka.sh starts a broker when java and mvn exist, and this
//   script stops it afterwards (only if it started it).
// - REQUIRE_INFRA=1 turns a missing engine into failing tests instead of skipped suites.
// Extra arguments go to Jest (e.g. `npm test -- dist/test/contract`).
'use strict';
const { spawnSync, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const resultsFile = path.join(root, '.test-results.json');
const soloResultsFile = path.join(root, '.test-results-solo.json');
const env = { ...process.env };

function log(msg) {
  process.stderr.write(`run-tests: ${msg}\n`);
}

function has(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

async function probePostgres() {
  if (env.TEST_PG_URL) return;
  const url = 'postgres://postgres@127.0.0.1:5432/postgres';
  const pg = require('pg');
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    env.TEST_PG_URL = url;
    log(`PostgreSQL at ${url}`);
  } catch (err) {
    log(`no PostgreSQL at 127.0.0.1:5432 (${err.message}); its suites ${env.REQUIRE_INFRA === '1' ? 'will fail' : 'are skipped'}`);
  } finally {
    await client.end().catch(() => {});
  }
}

async function probeRedis() {
  if (env.TEST_REDIS_URL) return;
  const url = 'redis://127.0.0.1:6379';
  const Redis = require('ioredis');
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 3000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await client.connect();
    if ((await client.ping()) !== 'PONG') throw new Error('no PONG');
    env.TEST_REDIS_URL = url;
    log(`Redis at ${url}`);
  } catch (err) {
    log(`no Redis at 127.0.0.1:6379 (${err.message}); its suites ${env.REQUIRE_INFRA === '1' ? 'will fail' : 'are skipped'}`);
  } finally {
    client.disconnect();
  }
}

let startedKafka = false;
function startKafka() {
  if (env.KAFKA_BROKERS) return;
  if (!has('java') || !has('mvn')) {
    log(`java and mvn are needed to run a Kafka broker; Kafka suites ${env.REQUIRE_INFRA === '1' ? 'will fail' : 'are skipped'}`);
    return;
  }
  const script = path.join(root, 'scripts', 'kafka.sh');
  const alreadyRunning = spawnSync(script, ['status'], { stdio: 'ignore' }).status === 0;
  const out = spawnSync(script, ['start'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const line = (out.stdout || '').trim().split('\n').pop() || '';
  if (out.status !== 0 || !line.startsWith('KAFKA_BROKERS=')) {
    log('could not start Kafka (see above)');
    return;
  }
  env.KAFKA_BROKERS = line.slice('KAFKA_BROKERS='.length);
  startedKafka = !alreadyRunning;
  log(`Kafka at ${env.KAFKA_BROKERS}`);
}

function stopKafka() {
  if (!startedKafka) return;
  startedKafka = false;
  spawnSync(path.join(root, 'scripts', 'kafka.sh'), ['stop'], { stdio: 'inherit' });
}

/** Counts of one Jest run, from its --json results file (a run that wrote none counts as one failure). */
function countsOf(file, status) {
  const counts = { passed: 0, failed: 0, skipped: 0 };
  try {
    const r = JSON.parse(fs.readFileSync(file, 'utf8'));
    counts.passed = r.numPassedTests;
    counts.skipped = r.numPendingTests + r.numTodoTests;
    // A suite that fails to load has no failed tests of its own: count it as one failure.
    counts.failed = r.numFailedTests + r.numRuntimeErrorTestSuites;
  } catch {
    counts.failed = 1;
  }
  if (status !== 0 && counts.failed === 0) counts.failed = 1;
  return counts;
}

function summarize(runs) {
  const t = runs.reduce((a, c) => ({ passed: a.passed + c.passed, failed: a.failed + c.failed, skipped: a.skipped + c.skipped }), { passed: 0, failed: 0, skipped: 0 });
  return `${t.passed} passed, ${t.failed} failed${t.skipped ? `, ${t.skipped} skipped` : ''}`;
}

/** One Jest run writing its results to `file`; returns its exit status. */
function jest(file, args) {
  fs.rmSync(file, { force: true });
  const run = spawnSync(process.execPath, [require.resolve('jest/bin/jest'), '--json', `--outputFile=${file}`, ...args], { cwd: root, env, stdio: 'inherit' });
  return run.status ?? 1;
}

async function main() {
  log('building (tsc)');
  try {
    // A clean build: a deleted test must not linger as a compiled file that Jest still runs.
    fs.rmSync(path.join(root, 'dist'), { recursive: true, force: true });
    // The server and tests, then the browser console (its own config: DOM types, ES modules).
    for (const config of ['tsconfig.json', 'tsconfig.console.json']) {
      execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', config], { cwd: root, stdio: 'inherit' });
    }
  } catch {
    process.stdout.write('0 passed, 1 failed\n');
    process.exit(1);
  }
  await probePostgres();
  await probeRedis();
  startKafka();
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      stopKafka();
      process.exit(130);
    });
  }
  const args = process.argv.slice(2);
  const runs = [];
  let status;
  if (args.length > 0) {
    status = jest(resultsFile, args);
    runs.push(countsOf(resultsFile, status));
  } else {
    // Suites named *.solo.test.* assert latencies (the issue-15 limits: /healthz within 50 ms under
    // attack); they run after the others, one at a time, so a neighbouring suite's load is not
    // what they measure.
    const shared = jest(resultsFile, ['--testPathIgnorePatterns', '\\.solo\\.test\\.js$']);
    runs.push(countsOf(resultsFile, shared));
    const solo = jest(soloResultsFile, ['--runInBand', '--passWithNoTests', '--testPathPattern', '\\.solo\\.test\\.js$']);
    runs.push(countsOf(soloResultsFile, solo));
    status = shared || solo;
  }
  stopKafka();
  process.stdout.write(`${summarize(runs)}\n`);
  process.exit(status);
}

main().catch((err) => {
  log(err.stack || String(err));
  stopKafka();
  process.stdout.write('0 passed, 1 failed\n');
  process.exit(1);
});
