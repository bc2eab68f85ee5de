import type { FastifyInstance } from 'fastify';
import type { App } from '../services';
import { creativePreview, type CreativePreview } from '../application/creative-reads';
import { escapeHtml as esc } from '../shared/html';
import { httpUrlOf } from '../shared/http-url';

/** Only http(s) URLs reach a src attribute (no javascript:, data: or relative tricks). */
const safeUrl = httpUrlOf;

/** One asset as markup: images and video by URL, text as text, anything else named. Never raw HTML. */
function assetHtml(key: string, value: unknown): string {
  const a = (typeof value === 'object' && value !== null ? value : { content: value }) as Record<string, unknown>;
  const type = String(a.asset_type ?? key);
  const url = safeUrl(a.url);
  if (url && /image/.test(type)) return `<img src="${esc(url)}" alt="${esc(key)}"${a.width ? ` width="${esc(a.width)}"` : ''}${a.height ? ` height="${esc(a.height)}"` : ''}>`;
  if (url && /video/.test(type)) return `<video src="${esc(url)}" controls muted playsinline${a.width ? ` width="${esc(a.width)}"` : ''}></video>`;
  if (url) return `<p class="asset"><span>${esc(key)}</span> <a href="${esc(url)}" rel="noopener noreferrer">${esc(url)}</a></p>`;
  if (typeof a.content === 'string') return `<p class="asset"><span>${esc(key)}</span> ${esc(a.content)}</p>`;
  return `<p class="asset"><span>${esc(key)}</span> (${esc(type)})</p>`;
}

function page(p: CreativePreview): string {
  const box = p.dimensions ? ` style="width:${p.dimensions.width}px;min-height:${p.dimensions.height}px"` : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(p.name)} — preview</title><style>body{font:14px system-ui,sans-serif;margin:16px;color:#222}.slot{border:1px dashed #999;padding:8px;max-width:100%;overflow:hidden}
img,video{max-width:100%;display:block}.asset span{font-weight:600;margin-right:.5em}header{color:#555;margin-bottom:8px}</style></head>
<body><header>${esc(p.name)} · format ${esc(p.format_name ?? p.format_id.id)}${p.dimensions ? ` · ${p.dimensions.width}×${p.dimensions.height}` : ''}</header>
<div class="slot"${box}>${Object.entries(p.assets).map(([k, v]) => assetHtml(k, v)).join('\n')}</div></body></html>`;
}

/**
 * Preview pages for `preview_creative`: public (a preview URL is meant to be shared) but
 * unguessable, expiring, and inert: a strict CSP allows the creative's images and video and
 * nothing else (no scripts, no frames, no forms).
 */
export function registerPreviewRoutes(fastify: FastifyInstance, app: App): void {
  fastify.get<{ Params: { id: string } }>('/previews/:id', async (req, reply) => {
    const p = /^pv_[\w-]{1,64}$/.test(req.params.id) ? await creativePreview(app.ports, req.params.id) : undefined;
    reply.header('content-security-policy', "default-src 'none'; img-src http: https:; media-src http: https:; style-src 'unsafe-inline'; frame-ancestors *");
    reply.header('x-content-type-options', 'nosniff');
    if (!p || Date.parse(p.expires_at) <= app.clock().getTime()) {
      return reply.status(404).type('text/html; charset=utf-8').send('<!doctype html><title>Preview not found</title><p>This preview does not exist or has expired.</p>');
    }
    return reply.header('cache-control', 'private, max-age=300').type('text/html; charset=utf-8').send(page(p));
  });
}
