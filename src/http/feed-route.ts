import type { FastifyInstance } from 'fastify';
import { feedQueries } from '../../projections/feed';
import type { App } from '../app';
import { FEED_RETENTION_DAYS } from '../domain/feed/events';
import { AppError } from '../shared/errors';
import { authenticate } from './auth';

const TYPE = /^[a-z][a-z0-9_.]*(\*)?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `publisher.*` → a LIKE pattern with the literal part escaped. */
const likePattern = (t: string) => t.replace(/\*$/, '').replace(/[\\%_]/g, (c) => `\\${c}`) + (t.endsWith('*') ? '%' : '');

/**
 * `GET /api/registry/feed?cursor=&limit=&types=` (any valid key): the registry change feed in a
 * stable order. `cursor` is the `event_id` of the last entry read; one that is unknown or older
 * than the retention answers 410 (re-bootstrap from the read endpoints). Errors are `{error}`.
 */
export function registerFeedRoute(fastify: FastifyInstance, app: App): void {
  fastify.get<{ Querystring: Record<string, string | string[] | undefined> }>('/api/registry/feed', async (req, reply) => {
    let principal;
    try {
      principal = await authenticate(req, app);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
    }
    if (!principal) return reply.status(401).header('www-authenticate', 'Bearer').send({ error: 'Authentication required' });
    for (const name of ['cursor', 'types', 'limit']) {
      if (Array.isArray(req.query[name])) return reply.status(400).send({ error: `${name} must be provided only once` });
    }
    const { cursor, types, limit: rawLimit } = req.query as Record<string, string | undefined>;
    if (cursor !== undefined && !UUID.test(cursor)) return reply.status(400).send({ error: 'Invalid cursor format. Must be a UUID.' });
    if (rawLimit !== undefined && !/^\d+$/.test(rawLimit)) return reply.status(400).send({ error: 'limit must be an integer' });
    const limit = rawLimit === undefined ? 100 : Number(rawLimit);
    if (limit < 1 || limit > 10_000) return reply.status(400).send({ error: 'limit must be between 1 and 10000' });
    const filters = types ? types.split(',').map((t) => t.trim()).filter(Boolean) : [];
    const badType = filters.find((t) => !TYPE.test(t));
    if (badType) return reply.status(400).send({ error: `Invalid type filter: ${badType}` });
    const patterns = filters.map(likePattern);

    const now = new Date();
    const oldest = new Date(now.getTime() - FEED_RETENTION_DAYS * 86_400_000).toISOString();
    let after = 0;
    if (cursor) {
      const position = await feedQueries.cursorPosition(app.readModels, cursor, oldest);
      if (position === undefined) {
        return reply.status(410).send({ error: 'cursor_expired', message: `Cursor is unknown or older than the ${FEED_RETENTION_DAYS}-day retention window. Re-bootstrap from the registry read endpoints.` });
      }
      after = Number(position);
    }
    const rows = await feedQueries.page(app.readModels, { after, oldest, patterns, limit });
    const events = rows.slice(0, limit);
    const latest = await feedQueries.latest(app.readModels, patterns);
    return reply.send({
      events,
      cursor: events.at(-1)?.event_id ?? cursor ?? null,
      has_more: rows.length > limit,
      freshness: {
        generated_at: now.toISOString(),
        latest_event_created_at: latest,
        lag_seconds: latest ? Math.max(0, Math.round((now.getTime() - Date.parse(latest)) / 1000)) : null,
        retention_days: FEED_RETENTION_DAYS,
      },
    });
  });
}
