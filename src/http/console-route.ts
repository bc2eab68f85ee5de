import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { EXPLORER_PATH } from './explorer-route';
import { packageFile } from './package-files';

export const CONSOLE_PATH = '/app';

/** The console's own modules, compiled from src/console by `npm run build` (which `npm ci` runs). */
const CONSOLE_DIST = path.resolve(__dirname, '..', '..', 'console');

/** The libraries the console imports, from the gateway's own packages (no CDN), by the name the import map gives them. */
const VENDOR = new Map<string, string>([
  ['preact.module.js', packageFile('preact', 'dist', 'preact.module.js')],
  ['hooks.module.js', packageFile('preact', 'hooks', 'dist', 'hooks.module.js')],
  ['htm.module.js', packageFile('htm', 'dist', 'htm.module.js')],
  ['htm-preact.module.js', packageFile('htm', 'preact', 'index.module.js')],
]);

const IMPORT_MAP = JSON.stringify({
  imports: {
    preact: `${CONSOLE_PATH}/vendor/preact.module.js`,
    'preact/hooks': `${CONSOLE_PATH}/vendor/hooks.module.js`,
    htm: `${CONSOLE_PATH}/vendor/htm.module.js`,
    'htm/preact': `${CONSOLE_PATH}/vendor/htm-preact.module.js`,
    'graphql-ws': `${EXPLORER_PATH}/graphql-ws.js`,
  },
});

const STYLES = `
:root { color-scheme: light; --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --accent: #0b5cad; --bg: #fff; --soft: #f6f8fa; --bad: #a40e26; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
header { display: flex; flex-wrap: wrap; gap: .75rem 1.25rem; align-items: center; padding: .75rem 1rem; border-bottom: 1px solid var(--line); background: var(--soft); }
header nav { display: flex; gap: 1rem; flex: 1; }
header nav a[aria-current="page"] { font-weight: 700; text-decoration: none; }
.who { color: var(--muted); }
main { padding: 1rem; max-width: 64rem; margin: 0 auto; }
.signin { max-width: 26rem; margin-top: 3rem; }
form { display: grid; gap: .5rem; }
label { font-weight: 600; }
input, select { font: inherit; padding: .5rem; border: 1px solid var(--muted); border-radius: 6px; background: var(--bg); color: var(--fg); }
[aria-invalid="true"] { border-color: var(--bad); border-width: 2px; }
.field { display: grid; gap: .25rem; margin-bottom: .5rem; }
form.inline { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; padding: .75rem; border: 1px solid var(--line); border-radius: 8px; margin-bottom: 1rem; }
form.inline h3 { margin: 0 1rem 0 0; font-size: 1rem; }
form.inline input { width: 6rem; }
form.inline p { flex-basis: 100%; margin: 0; }
.field .error { margin: 0; }
button { font: inherit; padding: .45rem 1rem; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { background: var(--bg); color: var(--accent); }
button[disabled] { opacity: .6; cursor: progress; }
.muted { color: var(--muted); }
.error { color: var(--bad); }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: .5rem; border-bottom: 1px solid var(--line); }
.status { display: inline-block; padding: 0 .5rem; border-radius: 1rem; background: var(--soft); border: 1px solid var(--line); font-size: .875rem; }
.status-active { background: #dafbe1; border-color: #1a7f37; }
.status-pending { background: #fff8c5; border-color: #9a6700; }
.status-rejected, .status-canceled { background: #ffebe9; border-color: var(--bad); }
.cards { list-style: none; padding: 0; display: grid; gap: 1rem; grid-template-columns: repeat(auto-fill, minmax(16rem, 1fr)); }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 1rem; }
.card h3 { margin-top: 0; }
.actions { display: flex; gap: .5rem; }
.chart svg { width: 100%; height: 10rem; background: var(--soft); border: 1px solid var(--line); }
.chart .bar { fill: var(--accent); }
.timeline { padding-left: 1.25rem; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
@media (max-width: 40rem) { header nav { order: 3; flex-basis: 100%; } th, td { padding: .35rem; } }
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>adcp-gateway console</title>
<link rel="stylesheet" href="${CONSOLE_PATH}/assets/console.css">
<script type="importmap">${IMPORT_MAP}</script>
<script type="module" src="${CONSOLE_PATH}/assets/app.js"></script>
</head>
<body>
<div id="app"><p>Loading the console…</p></div>
<noscript>The console needs JavaScript. The API is at <a href="/graphql">/graphql</a>.</noscript>
</body>
</html>
`;

/** Only this origin: its modules, the import map above (by its hash), its API and its WebSocket. */
const CSP = `default-src 'none'; script-src 'self' 'sha256-${createHash('sha256').update(IMPORT_MAP).digest('base64')}'; style-src 'self'; img-src 'self' data:; connect-src 'self' ws: wss:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`;

/**
 * The console at /app (and / sends a browser there): one page whose modules come from the
 * console's build and the gateway's own packages, so it runs with no connection beyond the gateway.
 */
export function registerConsoleRoutes(fastify: FastifyInstance): void {
  const modules = new Set(fs.existsSync(CONSOLE_DIST) ? fs.readdirSync(CONSOLE_DIST).filter((f) => f.endsWith('.js')) : []);
  if (!modules.has('app.js')) fastify.log.warn({ dir: CONSOLE_DIST }, 'the console is not built (npm run build compiles it): /app has no modules to load');
  fastify.get('/', async (_req, reply) => reply.redirect(`${CONSOLE_PATH}/`, 302));
  // Browsers ask for it on every page; there is none (an empty answer, not a 404 in their console).
  fastify.get('/favicon.ico', async (_req, reply) => reply.status(204).header('cache-control', 'public, max-age=86400').send());
  const page = async (_req: unknown, reply: import('fastify').FastifyReply) => reply.type('text/html; charset=utf-8').header('content-security-policy', CSP).header('cache-control', 'no-cache').send(PAGE);
  fastify.get(CONSOLE_PATH, page);
  fastify.get(`${CONSOLE_PATH}/`, page);
  fastify.get(`${CONSOLE_PATH}/assets/console.css`, async (_req, reply) => reply.type('text/css; charset=utf-8').header('cache-control', 'no-cache').send(STYLES));
  fastify.get<{ Params: { file: string } }>(`${CONSOLE_PATH}/assets/:file`, async (req, reply) => {
    if (!modules.has(req.params.file)) return reply.status(404).type('text/plain; charset=utf-8').send('no such console file');
    return reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(fs.createReadStream(path.join(CONSOLE_DIST, req.params.file)));
  });
  fastify.get<{ Params: { file: string } }>(`${CONSOLE_PATH}/vendor/:file`, async (req, reply) => {
    const file = VENDOR.get(req.params.file);
    if (!file) return reply.status(404).type('text/plain; charset=utf-8').send('no such console file');
    return reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=86400').send(fs.createReadStream(file));
  });
}
