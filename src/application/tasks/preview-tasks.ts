import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { creativeQueries } from '../../../projections/creatives';
import type { CreativePreview } from '../../../projections/previews';
import type { CreativeContent } from '../../domain/creative/creative';
import type { Format } from '../../domain/catalog/catalog';
import { AppError } from '../../shared/errors';
import { resolveAccount } from '../accounts';
import { formatsFor } from '../sandbox/seeds';
import { defineTask, type TaskContext } from './context';
import { acceptFormat } from '../formats';
import { httpUrlInput } from '../validation';

/** How long a preview URL keeps working. */
const PREVIEW_TTL_MS = 24 * 3_600_000;

const formatId = z.object({ agent_url: httpUrlInput, id: z.string().regex(/^[A-Za-z0-9_-]{1,255}$/) }).passthrough();

const input = z
  .object({
    request_type: z.enum(['single', 'batch', 'variant']).default('single'),
    creative_manifest: z
      .object({ creative_id: z.string().max(255).optional(), name: z.string().max(500).optional(), format_id: formatId.optional(), assets: z.record(z.string(), z.unknown()).optional() })
      .passthrough()
      .optional(),
    creative_id: z.string().min(1).max(255).optional(),
    format_id: formatId.optional(),
    output_format: z.enum(['url', 'html']).default('url'),
    account: z.unknown().optional(),
  })
  .passthrough();

/**
 * AdCP `preview_creative`: a creative (inline manifest, or one in the caller's library) rendered
 * in one of this seller's formats, returned as a URL to a page this gateway serves (`/previews/…`,
 * sandboxed, nothing loaded but the creative's own image and video URLs). Each preview is
 * recorded, so its URL works on every instance until it expires.
 */
export const previewCreative = defineTask({
  mutating: true,
  description: 'Renders a creative in one of this seller\'s formats; answers a preview URL (and HTML on request).',
  input,
  async run(i, ctx) {
    if (i.request_type !== 'single') throw new AppError('UNSUPPORTED_FEATURE', `request_type ${i.request_type} is not supported; send one creative per request (single)`, 'request_type');
    const account = i.account !== undefined ? await resolveAccount(ctx, i.account) : undefined;
    let manifest = i.creative_manifest as { creative_id?: string; name?: string; format_id?: { agent_url: string; id: string }; assets?: Record<string, unknown> } | undefined;
    const creativeId = i.creative_id ?? manifest?.creative_id;
    let storedFormat: { sandbox: boolean } | undefined;
    if (!manifest?.assets && creativeId) {
      const [row] = await creativeQueries.list(ctx.ports.readModels, ctx.principal.org, { creativeIds: [creativeId] });
      if (!row) throw new AppError('CREATIVE_NOT_FOUND', 'no creative of yours has this creative_id', i.creative_id ? 'creative_id' : 'creative_manifest.creative_id');
      const c = JSON.parse(row.doc) as CreativeContent;
      manifest = { creative_id: c.creative_id, name: c.name, format_id: c.format_id, assets: c.assets };
      storedFormat = { sandbox: c.sandbox === true };
    }
    if (!manifest) throw new AppError('INVALID_REQUEST', 'creative_manifest or creative_id is required', 'creative_manifest');
    const wanted = i.format_id ?? manifest.format_id;
    if (!wanted) throw new AppError('INVALID_REQUEST', 'format_id is required (on the request or in creative_manifest)', 'creative_manifest.format_id');
    const formats = await formatsFor(ctx, account);
    // The rule sync_creatives and build_creative apply too (placeholder agents in a sandbox only).
    // A creative of the library in its own format was taken by sync_creatives already: it renders
    // in that format, found by the rule of the world it was synced in.
    const stored = storedFormat && !i.format_id ? storedFormat : undefined;
    const taken = acceptFormat(formats, wanted, ctx.origin, account?.sandbox === true || stored?.sandbox === true);
    if ('refusal' in taken && !stored) {
      throw new AppError('VALIDATION_ERROR', taken.refusal.message, i.format_id ? 'format_id' : 'creative_manifest.format_id', { accepted_values: taken.refusal.accepted_values });
    }
    return { response_type: 'single', ...(await recordPreview(ctx, { ...manifest, format_id: wanted }, 'format' in taken ? taken.format : undefined)) };
  },
});

/**
 * Records a rendering of a manifest in a format and answers it as AdCP's preview content
 * (`previews`, `expires_at`): a URL to a page this gateway serves, on every instance, for 24 h.
 */
export async function recordPreview(
  ctx: TaskContext,
  manifest: { creative_id?: string; name?: string; format_id: { agent_url: string; id: string }; assets?: Record<string, unknown> },
  format: Format | undefined,
): Promise<{ previews: Record<string, unknown>[]; expires_at: string }> {
  const now = ctx.ports.clock();
  const preview: CreativePreview = {
    preview_id: `pv_${randomBytes(16).toString('base64url')}`,
    owner: ctx.principal.org,
    ...(manifest.creative_id ? { creative_id: manifest.creative_id } : {}),
    name: manifest.name ?? manifest.creative_id ?? 'Creative preview',
    format_id: { agent_url: manifest.format_id.agent_url, id: manifest.format_id.id },
    ...(format ? { format_name: format.name } : {}),
    ...(format?.dimensions ? { dimensions: format.dimensions } : {}),
    assets: manifest.assets ?? {},
    expires_at: new Date(now.getTime() + PREVIEW_TTL_MS).toISOString(),
  };
  await ctx.ports.store.append(`preview-${preview.preview_id}`, [{ type: 'CreativePreviewRendered', data: { preview, at: now.toISOString() } }], { expectedVersion: 'no_stream' });
  const url = `${ctx.origin ?? ctx.ports.settings.publicUrl ?? 'http://127.0.0.1'}/previews/${preview.preview_id}`;
  return {
    previews: [
      {
        preview_id: preview.preview_id,
        renders: [
          {
            render_id: `${preview.preview_id}_primary`,
            output_format: 'url',
            preview_url: url,
            role: 'primary',
            ...(preview.dimensions ? { dimensions: preview.dimensions } : {}),
            embedding: { recommended_sandbox: '', requires_https: false, supports_fullscreen: false },
          },
        ],
        input: { name: 'Default' },
      },
    ],
    expires_at: preview.expires_at,
  };
}
