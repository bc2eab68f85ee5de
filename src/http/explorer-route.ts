import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { packageFile } from './package-files';

/** Where the explorer's files are served from: npm packages installed with the gateway, no CDN. */
export const EXPLORER_PATH = '/graphql/explorer';

/**
 * The files the explorer page loads, by the name it asks for: GraphiQL's browser build and its
 * React, and graphql-ws's browser client (its module and the module it imports), for
 * subscriptions. A fixed list: nothing else under node_modules is reachable.
 */
function explorerAssets(): Map<string, { file: string; type: string }> {
  const assets = new Map<string, { file: string; type: string }>([
    ['graphiql.min.js', { file: packageFile('graphiql', 'graphiql.min.js'), type: 'text/javascript; charset=utf-8' }],
    ['graphiql.min.css', { file: packageFile('graphiql', 'graphiql.min.css'), type: 'text/css; charset=utf-8' }],
    ['react.production.min.js', { file: packageFile('react', 'umd', 'react.production.min.js'), type: 'text/javascript; charset=utf-8' }],
    ['react-dom.production.min.js', { file: packageFile('react-dom', 'umd', 'react-dom.production.min.js'), type: 'text/javascript; charset=utf-8' }],
  ]);
  const wsDist = packageFile('graphql-ws', 'dist');
  const client = fs.readFileSync(path.join(wsDist, 'client.js'), 'utf8');
  assets.set('graphql-ws.js', { file: path.join(wsDist, 'client.js'), type: 'text/javascript; charset=utf-8' });
  // The client imports its shared module by a hashed name ('./common-<hash>.js'): served under that name.
  for (const [, name] of client.matchAll(/from '\.\/([\w-]+\.js)'/g)) assets.set(name!, { file: path.join(wsDist, name!), type: 'text/javascript; charset=utf-8' });
  return assets;
}

/** Our part of the page: GraphiQL over POST /graphql, subscriptions over graphql-ws, credentials from GraphiQL's Headers tab. */
const EXPLORER_SCRIPT = `import { createClient } from '${EXPLORER_PATH}/graphql-ws.js';
// The Authorization header typed in GraphiQL's Headers tab (kept in its localStorage) also signs
// the WebSocket in: a browser cannot set headers on one, so it travels in connection_init.
function authorization() {
  try {
    const headers = JSON.parse(localStorage.getItem('graphiql:headers') || '{}');
    return headers.Authorization || headers.authorization;
  } catch {
    return undefined;
  }
}
const wsClient = createClient({
  url: location.origin.replace(/^http/, 'ws') + '/graphql',
  lazy: true,
  retryAttempts: 0,
  connectionParams: () => (authorization() ? { authorization: authorization() } : {}),
});
const fetcher = GraphiQL.createFetcher({ url: '/graphql', wsClient });
const defaultQuery = '# adcp-gateway GraphQL. Put your key in Headers below: {"Authorization": "Bearer sk_..."}\\n\\nquery {\\n  viewer { org role }\\n  products(brief: "video") { productId name }\\n}\\n';
ReactDOM.createRoot(document.getElementById('graphiql')).render(
  React.createElement(GraphiQL, { fetcher, defaultQuery, defaultHeaders: '{\\n  "Authorization": "Bearer sk_..."\\n}', isHeadersEditorEnabled: true, shouldPersistHeaders: true }),
);
`;

const EXPLORER_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>adcp-gateway GraphQL explorer</title>
<link rel="stylesheet" href="${EXPLORER_PATH}/graphiql.min.css">
<style>html, body { margin: 0; height: 100%; } #graphiql { height: 100vh; }</style>
</head>
<body>
<main id="graphiql">Loading the GraphQL explorer…</main>
<script src="${EXPLORER_PATH}/react.production.min.js"></script>
<script src="${EXPLORER_PATH}/react-dom.production.min.js"></script>
<script src="${EXPLORER_PATH}/graphiql.min.js"></script>
<script type="module" src="${EXPLORER_PATH}/explorer.js"></script>
</body>
</html>
`;

/** Nothing from elsewhere: scripts, styles, fonts and images from this origin, requests to it (and its WebSocket). */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'";

/** Whether a GET /graphql is a person opening it in a browser (HTML wanted, no operation in the URL). */
export function wantsExplorer(req: FastifyRequest): boolean {
  return req.method === 'GET' && (req.headers.accept ?? '').includes('text/html') && (req.query as { query?: unknown } | undefined)?.query === undefined;
}

export function sendExplorer(reply: FastifyReply): FastifyReply {
  return reply.type('text/html; charset=utf-8').header('content-security-policy', CSP).header('cache-control', 'no-cache').send(EXPLORER_PAGE);
}

/**
 * The GraphQL explorer (GraphiQL) at GET /graphql in a browser, working offline: every file it
 * loads is served here from the gateway's own node_modules.
 */
export function registerExplorerRoutes(fastify: FastifyInstance): void {
  const assets = explorerAssets();
  fastify.get(`${EXPLORER_PATH}/explorer.js`, async (_req, reply) => reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(EXPLORER_SCRIPT));
  fastify.get<{ Params: { asset: string } }>(`${EXPLORER_PATH}/:asset`, async (req, reply) => {
    const asset = assets.get(req.params.asset);
    if (!asset) return reply.status(404).type('text/plain; charset=utf-8').send('no such explorer file');
    // Versioned with the installed packages: a day's caching is safe, and a restart after an upgrade is seen within it.
    return reply.type(asset.type).header('cache-control', 'public, max-age=86400').send(fs.createReadStream(asset.file));
  });
}
