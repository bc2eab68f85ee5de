import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { EXPLORER_PATH } from './explorer-route';
import { packageFile } from './package-files';

export const CONSOLE_PATH = '/app';

/** The console's own modules, compiled from web/ by `npm run build` (which `npm ci` runs), and its stylesheet. */
const CONSOLE_DIST = path.resolve(__dirname, '..', '..', 'console');
const STYLESHEET = path.resolve(__dirname, '..', '..', '..', 'web', 'console.css');

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
  // Relative paths of the built modules (`app.js`, `pages/buys.js`): the only files served from there.
  const modules = new Set(
    fs.existsSync(CONSOLE_DIST)
      ? (fs.readdirSync(CONSOLE_DIST, { recursive: true }) as string[]).map((f) => f.split(path.sep).join('/')).filter((f) => f.endsWith('.js'))
      : [],
  );
  if (!modules.has('app.js')) fastify.log.warn({ dir: CONSOLE_DIST }, 'the console is not built (npm run build compiles it): /app has no modules to load');
  fastify.get('/', async (_req, reply) => reply.redirect(`${CONSOLE_PATH}/`, 302));
  // Browsers ask for it on every page; there is none (an empty answer, not a 404 in their console).
  fastify.get('/favicon.ico', async (_req, reply) => reply.status(204).header('cache-control', 'public, max-age=86400').send());
  const page = async (_req: unknown, reply: import('fastify').FastifyReply) => reply.type('text/html; charset=utf-8').header('content-security-policy', CSP).header('cache-control', 'no-cache').send(PAGE);
  fastify.get(CONSOLE_PATH, page);
  fastify.get(`${CONSOLE_PATH}/`, page);
  const styles = fs.existsSync(STYLESHEET) ? fs.readFileSync(STYLESHEET, 'utf8') : '';
  fastify.get(`${CONSOLE_PATH}/assets/console.css`, async (_req, reply) => reply.type('text/css; charset=utf-8').header('cache-control', 'no-cache').send(styles));
  fastify.get<{ Params: { '*': string } }>(`${CONSOLE_PATH}/assets/*`, async (req, reply) => {
    const file = req.params['*'];
    if (!modules.has(file)) return reply.status(404).type('text/plain; charset=utf-8').send('no such console file');
    return reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(fs.createReadStream(path.join(CONSOLE_DIST, file)));
  });
  fastify.get<{ Params: { file: string } }>(`${CONSOLE_PATH}/vendor/:file`, async (req, reply) => {
    const file = VENDOR.get(req.params.file);
    if (!file) return reply.status(404).type('text/plain; charset=utf-8').send('no such console file');
    return reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=86400').send(fs.createReadStream(file));
  });
}
