#!/usr/bin/env node
// Where a create's time goes on PostgreSQL + Kafka (issue 39): `node scripts/profile-postgres-create.js [count]`
// (after `npx tsc -p tsconfig.json`; PostgreSQL at PG_URL or 127.0.0.1:5432, KAFKA_BROKERS or 127.0.0.1:29092;
// PROFILE=1 adds the main thread's CPU by package and who does its socket writes; DIST=<dir> profiles another build).
// Starts a gateway in this process on a scratch database and topic, sends `count` REST creates from
// 16 clients (the bench's load generator) after 300 to warm up, and times, by wrapping them in place:
// the appends, the projections' read-your-writes wait (waitFor), the applier's batches, and the
// wait for a pooled connection. A developer's tool: it reaches into the running app.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const inspector = require('node:inspector');
const D = process.env.DIST ?? path.join(__dirname, '..', 'dist');
const pg = require(require.resolve('pg', { paths: [D] }));
const { loadConfig } = require(`${D}/src/config`);
const { startGateway } = require(`${D}/src/main`);
const { issueApiKey } = require(`${D}/src/application/api-keys`);
const { ROOMY_LIMITS } = require(`${D}/test/support/gateway`);
const { runLoad } = require(`${D}/test/bench/run`);
const { createMediaBuyBody } = require(`${D}/test/bench/soak`);

const timings = {};
const timed = (obj, name, key = name) => {
  const f = obj[name].bind(obj);
  obj[name] = async (...args) => {
    const t = performance.now();
    try {
      return await f(...args);
    } finally {
      (timings[key] ??= []).push(performance.now() - t);
    }
  };
};
const sum = (a) => a.reduce((x, y) => x + y, 0);
const pct = (a, p) => [...a].sort((x, y) => x - y)[Math.floor((a.length - 1) * p)].toFixed(1);

(async () => {
  const count = Number(process.argv[2] ?? 1500);
  const adminUrl = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const admin = new pg.Client(adminUrl);
  await admin.connect();
  const db = `adcp_profile_${Math.random().toString(36).slice(2, 8)}`;
  await admin.query(`CREATE DATABASE ${db}`);
  const url = new URL(adminUrl);
  url.pathname = `/${db}`;
  const topic = `adcp.profile.${db}`;
  const gw = await startGateway(loadConfig({ HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent', DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'adcp-profile-')), EVENT_STORE_URL: url.toString(), KAFKA_BROKERS: process.env.KAFKA_BROKERS ?? '127.0.0.1:29092', KAFKA_TOPIC: topic, KAFKA_FEED_TOPIC: `${topic}.feed`, APPROVAL_POLICY: 'never', ...ROOMY_LIMITS }));
  try {
    const key = (await issueApiKey(gw.app.store, { org: 'bench', role: 'buyer' }, { now: new Date().toISOString() })).key;
    for (let i = 0; i < 500 && (await fetch(`${gw.url}/readyz`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 20));
    const body = createMediaBuyBody();
    await runLoad({ url: gw.url, key, path: '/api/tasks/create_media_buy', body, count: 300, concurrency: 16, prefix: 'warm-' });
    const app = gw.app;
    timed(app.projections, 'waitFor');
    timed(app.store, 'append');
    timed(app.readModels, 'applyBatches');
    const statements = [];
    const apply = app.readModels.applyBatches;
    app.readModels.applyBatches = (moves) => (statements.push(sum(moves.map((m) => m.statements.length))), apply(moves));
    // Time from asking a pool for a connection to getting one, per pool (the callback form, used by pool.query, is not timed).
    const waits = new Map();
    const ids = new WeakMap();
    let poolCount = 0;
    const connect = pg.Pool.prototype.connect;
    pg.Pool.prototype.connect = function (cb) {
      if (cb) return connect.call(this, cb);
      if (!ids.has(this)) ids.set(this, `pool (max ${this.options.max}) #${++poolCount}`);
      const t = performance.now();
      return connect.call(this).then((c) => {
        const k = ids.get(this);
        (waits.get(k) ?? waits.set(k, []).get(k)).push(performance.now() - t);
        return c;
      });
    };
    // Queries sent, by their first 60 characters (all pools and clients).
    const queries = new Map();
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function (config, ...rest) {
      const text = (typeof config === 'string' ? config : config?.text ?? '').replace(/\s+/g, ' ').slice(0, 60);
      queries.set(text, (queries.get(text) ?? 0) + 1);
      return query.call(this, config, ...rest);
    };
    const session = new inspector.Session();
    session.connect();
    const post = (m, p) => new Promise((res, rej) => session.post(m, p, (e, r) => (e ? rej(e) : res(r))));
    if (process.env.PROFILE) {
      await post('Profiler.enable');
      await post('Profiler.start');
    }
    const cpu0 = process.cpuUsage();
    const elu0 = performance.eventLoopUtilization();
    const t = performance.now();
    const rate = await runLoad({ url: gw.url, key, path: '/api/tasks/create_media_buy', body, count, concurrency: 16, prefix: 'run-' });
    const wall = performance.now() - t;
    const cpu = process.cpuUsage(cpu0);
    const elu = performance.eventLoopUtilization(elu0);
    pg.Pool.prototype.connect = connect;
    pg.Client.prototype.query = query;
    console.log(`${rate.toFixed(0)} creates/s at 16 clients (${count} in ${wall.toFixed(0)} ms: ${((16 * wall) / count).toFixed(1)} ms a create)`);
    console.log(`process CPU ${((cpu.user + cpu.system) / 1000 / count).toFixed(2)} ms a create (load generator thread included); event loop busy ${(elu.utilization * 100).toFixed(0)} %`);
    for (const [k, a] of Object.entries(timings)) console.log(`${k}: n=${a.length} mean=${(sum(a) / a.length).toFixed(2)} ms p50=${pct(a, 0.5)} p99=${pct(a, 0.99)}`);
    console.log(`applier batches: statements per batch ${(sum(statements) / Math.max(1, statements.length)).toFixed(1)} (incl. consumer checkpoint moves with none)`);
    for (const [k, a] of waits) console.log(`${k}: connects ${a.length}, mean wait ${(sum(a) / a.length).toFixed(2)} ms, max ${Math.max(...a).toFixed(1)}`);
    console.log(`queries: ${(sum([...queries.values()]) / count).toFixed(2)} a create; the most sent:`);
    [...queries].sort((a, b) => b[1] - a[1]).slice(0, 12).forEach(([text, n]) => console.log(`  ${(n / count).toFixed(2)}  ${text}`));
    if (process.env.PROFILE) {
      const { profile } = await post('Profiler.stop');
      const byId = new Map(profile.nodes.map((n) => [n.id, n]));
      const parent = new Map();
      for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n);
      const where = (u) => u.replace(/^.*node_modules\//, 'nm/').replace(/^.*\/dist\//, 'dist/');
      const self = new Map();
      const writers = new Map();
      let total = 0;
      profile.samples.forEach((id, i) => {
        const dt = profile.timeDeltas[i];
        total += dt;
        let n = byId.get(id);
        let k = where(n.callFrame.url) || n.callFrame.functionName;
        if (k.startsWith('nm/')) k = k.split('/').slice(0, 2).join('/');
        self.set(k, (self.get(k) ?? 0) + dt);
        const fn = n.callFrame.functionName;
        if (fn !== 'writeBuffer' && fn !== 'writev') return;
        const chain = [];
        while (n && chain.length < 2) {
          if (/node_modules|dist\//.test(n.callFrame.url)) chain.push(`${where(n.callFrame.url)}:${n.callFrame.functionName}`);
          n = parent.get(n.id);
        }
        const w = `${fn} <- ${chain.join(' <- ')}`;
        writers.set(w, (writers.get(w) ?? 0) + dt);
      });
      const top = (m, k) => [...m].sort((a, b) => b[1] - a[1]).slice(0, k).forEach(([name, v]) => console.log(`  ${((100 * v) / total).toFixed(1)}%  ${name}`));
      console.log('main thread, self time by package or file:');
      top(self, 20);
      console.log('socket writes, by caller:');
      top(writers, 8);
    }
  } finally {
    await gw.stop();
    await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    await admin.end();
  }
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
