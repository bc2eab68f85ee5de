#!/usr/bin/env node
// CPU per create of each gateway process when N instances share one PostgreSQL database and Kafka
// topic (issue 39): `node scripts/cpu-per-instance.js [instances] [creates]` (after `npx tsc -p
// tsconfig.json`; PostgreSQL at PG_URL or 127.0.0.1:5432, KAFKA_BROKERS or 127.0.0.1:29092). Starts
// N `adcp-gateway serve` processes on a scratch database and topic, warms them up, samples their
// CPU for 3 s at rest, then sends `creates` REST creates spread over them (18 clients in all) and
// prints each process's CPU time per create of the whole cluster (from /proc/<pid>/stat: Linux).
// A developer's tool, like scripts/profile-postgres-create.js.
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const D = path.join(__dirname, '..', 'dist');
const BIN = path.join(__dirname, '..', 'bin', 'adcp-gateway.js');
const pg = require(require.resolve('pg', { paths: [D] }));
const { runLoad } = require(`${D}/test/bench/run`);
const { createMediaBuyBody } = require(`${D}/test/bench/soak`);
const { ROOMY_LIMITS } = require(`${D}/test/support/gateway`);

/** User + system CPU milliseconds of a process so far. */
const cpuMs = (pid) => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * (1000 / 100);
};

(async () => {
  const instances = Number(process.argv[2] ?? 3);
  const count = Number(process.argv[3] ?? 3000);
  const adminUrl = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const admin = new pg.Client(adminUrl);
  await admin.connect();
  const db = `adcp_cpu_${Math.random().toString(36).slice(2, 8)}`;
  await admin.query(`CREATE DATABASE ${db}`);
  const url = new URL(adminUrl);
  url.pathname = `/${db}`;
  const topic = `adcp.cpu.${db}`;
  const env = { PATH: process.env.PATH, EVENT_STORE_URL: url.toString(), KAFKA_BROKERS: process.env.KAFKA_BROKERS ?? '127.0.0.1:29092', KAFKA_TOPIC: topic, KAFKA_FEED_TOPIC: `${topic}.feed`, APPROVAL_POLICY: 'never', ...ROOMY_LIMITS };
  const tmp = (p) => fs.mkdtempSync(path.join(os.tmpdir(), p));
  const key = execFileSync(process.execPath, [BIN, 'keys', 'create', '--org', 'cpu', '--role', 'buyer'], { env: { ...env, DATA_DIR: tmp('adcp-cpu-key-') }, stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  const gateways = [];
  try {
    for (let i = 0; i < instances; i++) {
      const child = spawn(process.execPath, [BIN, 'serve'], { env: { ...env, DATA_DIR: tmp('adcp-cpu-'), HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info' }, stdio: ['ignore', 'ignore', 'pipe'] });
      const listening = await new Promise((resolve, reject) => {
        let err = '';
        child.stderr.on('data', (c) => {
          err += c;
          const m = /"url":"(http:\/\/[^"]+)".*"msg":"adcp-gateway listening"/.exec(err);
          if (m) resolve(m[1]);
        });
        child.once('exit', (code) => reject(new Error(`a gateway exited (${code}):\n${err}`)));
      });
      child.stderr.resume();
      gateways.push({ child, url: listening });
    }
    for (const g of gateways) for (let i = 0; i < 500 && (await fetch(`${g.url}/readyz`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 20));
    const body = createMediaBuyBody();
    const load = (total, prefix) => Promise.all(gateways.map((g, i) => runLoad({ url: g.url, key, path: '/api/tasks/create_media_buy', body, count: Math.ceil(total / instances), concurrency: Math.max(1, Math.round(18 / instances)), prefix: `${prefix}-${i}-` })));
    await load(600, 'warm');
    const rest0 = gateways.map((g) => cpuMs(g.child.pid));
    await new Promise((r) => setTimeout(r, 3000));
    const atRest = gateways.map((g, i) => (cpuMs(g.child.pid) - rest0[i]) / 3000);
    const before = gateways.map((g) => cpuMs(g.child.pid));
    const t = Date.now();
    await load(count, 'run');
    const elapsed = Date.now() - t;
    const used = gateways.map((g, i) => cpuMs(g.child.pid) - before[i]);
    console.log(`${instances} instance(s): ${Math.round((count / elapsed) * 1000)} creates/s`);
    console.log(`CPU ms per create of the cluster, by instance: ${used.map((u) => (u / count).toFixed(2)).join(' ')} (all: ${(used.reduce((a, b) => a + b, 0) / count).toFixed(2)})`);
    console.log(`CPU share in the 3 s after the warm-up, by instance: ${atRest.map((x) => `${(x * 100).toFixed(1)} %`).join(' ')}`);
  } finally {
    for (const g of gateways) g.child.kill('SIGTERM');
    await Promise.all(gateways.map((g) => new Promise((r) => (g.child.exitCode !== null ? r() : g.child.once('exit', r)))));
    await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    await admin.end();
  }
})();
