import { feedQueries } from '../../projections/feed';
import { publisherQueries } from '../../projections/publishers';
import { storyboardQueries } from '../../projections/storyboards';
import { FEED_RETENTION_DAYS, type FeedEntry } from '../domain/feed/events';
import { testKitIdOf } from '../domain/storyboards/bundle';
import { resolveTarget } from '../domain/storyboards/versions';
import type { RegistryReadPorts } from './ports';

/**
 * Registry reads shared by the REST paths and GraphQL: each answers the REST status and body
 * (`{error}` bodies for failures), which GraphQL maps to its error codes.
 */
export type Answer = { status: number; body: Record<string, unknown> };

const INVALID_TARGET = 'Invalid compliance_target. Use 3.1, 3.0, 3.1-rc, 3.1-beta, or an exact bundled version.';
type Step = Record<string, unknown> & { narrative?: unknown; expected?: unknown; description?: unknown; expected_output?: unknown };

/**
 * The spec's StoryboardDetail (§2.1) over the stored YAML: every field is kept, and the ones the
 * spec requires are always there — steps get `description` and `expected_output` from the
 * YAML's `narrative` and `expected` (reference §1.4 drift: the YAML never names them so).
 */
export function storyboardDetail(s: Record<string, unknown>): Record<string, unknown> {
  const text = (v: unknown) => (typeof v === 'string' ? v.trim() : '');
  const agent = (s.agent ?? {}) as Record<string, unknown>;
  return {
    ...s,
    id: s.id,
    title: text(s.title),
    category: text(s.category),
    summary: text(s.summary),
    agent: { ...agent, interaction_model: text(agent.interaction_model), examples: Array.isArray(agent.examples) ? agent.examples : [] },
    phases: (s.phases as Record<string, unknown>[]).map((p) => ({
      ...p,
      title: text(p.title),
      steps: (p.steps as Step[]).map((st) => ({
        ...st,
        id: String(st.id ?? ''),
        title: text(st.title),
        description: text(st.description ?? st.narrative ?? st.title),
        expected_output: text(st.expected_output ?? st.expected),
      })),
    })),
  };
}

/** The bundle a compliance target names, or the REST answer refusing it. */
async function bundleFor(ports: RegistryReadPorts, requested: string | undefined): Promise<{ version: string } | { refused: Answer }> {
  const bundles = await storyboardQueries.bundles(ports.readModels);
  // A line (3.1, 3.1-rc) or the default picks among bundles that loaded; an exact version
  // names its bundle even when it is broken, and that is a 500.
  const exact = requested && bundles.some((b) => b.adcp_version === requested) ? requested : undefined;
  const version = exact ?? resolveTarget(requested, bundles.filter((b) => b.state === 'ready').map((b) => b.adcp_version));
  if (!version) return { refused: { status: 400, body: { error: INVALID_TARGET } } };
  if (bundles.find((b) => b.adcp_version === version)?.state !== 'ready') return { refused: { status: 500, body: { error: 'Failed to get storyboard' } } };
  return { version };
}

/** The storyboards of the bundle a compliance target names: `{adcp_version, storyboards: [{id, title, category}]}`. */
export async function listStoryboards(ports: RegistryReadPorts, target: string | undefined): Promise<Answer> {
  const bundle = await bundleFor(ports, target?.trim() || undefined);
  if ('refused' in bundle) return bundle.refused;
  return { status: 200, body: { adcp_version: bundle.version, storyboards: await storyboardQueries.list(ports.readModels, bundle.version) } };
}

/** The longest storyboard id looked up (bundled ids are a few dozen characters). */
export const MAX_STORYBOARD_ID_LENGTH = 256;

export async function getStoryboard(ports: RegistryReadPorts, id: string, target: string | undefined): Promise<Answer> {
  if (id.length > MAX_STORYBOARD_ID_LENGTH) return { status: 400, body: { error: `id is longer than ${MAX_STORYBOARD_ID_LENGTH} characters` } };
  const requested = target?.trim() || undefined;
  const bundle = await bundleFor(ports, requested);
  if ('refused' in bundle) return bundle.refused;
  const { version } = bundle;
  const storyboard = await storyboardQueries.storyboard(ports.readModels, version, id);
  if (!storyboard) return { status: 404, body: { error: 'Storyboard not found' } };
  const kitId = testKitIdOf(storyboard);
  const kit = kitId ? await storyboardQueries.testKit(ports.readModels, version, kitId) : undefined;
  return {
    status: 200,
    body: {
      adcp_version: version,
      requested_compliance_target: requested ?? version.split('.').slice(0, 2).join('.'),
      storyboard: storyboardDetail(storyboard),
      ...(kit ? { test_kit: kit } : {}),
    },
  };
}

const TYPE = /^[a-z][a-z0-9_.]*(\*)?$/;
/** Type filters one feed read may name (docs/registry.md: the change feed); there are fewer than a dozen types. */
export const MAX_FEED_TYPES = 100;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `publisher.*` → a LIKE pattern with the literal part escaped. */
const likePattern = (t: string) => t.replace(/\*$/, '').replace(/[\\%_]/g, (c) => `\\${c}`) + (t.endsWith('*') ? '%' : '');

/** A feed page's entries as stored: the REST body's, each with its log position (what a subscription resumes after). */
export type FeedPageEntry = FeedEntry & { position: number };

/**
 * A page of the change feed; `cursor` is the `event_id` of the last entry read. `newest` (not a
 * REST parameter) answers the last `limit` entries after the cursor instead of the first ones.
 */
export async function readFeed(ports: RegistryReadPorts, q: { cursor?: string; limit?: string; types?: string }, opts: { newest?: boolean } = {}): Promise<Answer & { entries?: FeedPageEntry[] }> {
  if (q.cursor !== undefined && !UUID.test(q.cursor)) return { status: 400, body: { error: 'Invalid cursor format. Must be a UUID.' } };
  if (q.limit !== undefined && !/^\d+$/.test(q.limit)) return { status: 400, body: { error: 'limit must be an integer' } };
  const limit = q.limit === undefined ? 100 : Number(q.limit);
  if (limit < 1 || limit > 10_000) return { status: 400, body: { error: 'limit must be between 1 and 10000' } };
  const filters = q.types ? q.types.split(',').map((t) => t.trim()).filter(Boolean) : [];
  if (filters.length > MAX_FEED_TYPES) return { status: 400, body: { error: `types holds ${filters.length} filters; at most ${MAX_FEED_TYPES} are allowed` } };
  const badType = filters.find((t) => !TYPE.test(t));
  if (badType) return { status: 400, body: { error: `Invalid type filter: ${badType}` } };
  const patterns = filters.map(likePattern);

  const now = new Date();
  const oldest = new Date(now.getTime() - FEED_RETENTION_DAYS * 86_400_000).toISOString();
  let after = 0;
  if (q.cursor) {
    const position = await feedQueries.cursorPosition(ports.readModels, q.cursor, oldest);
    if (position === undefined) {
      return { status: 410, body: { error: 'cursor_expired', message: `Cursor is unknown or older than the ${FEED_RETENTION_DAYS}-day retention window. Re-bootstrap from the registry read endpoints.` } };
    }
    after = Number(position);
  }
  const rows = await feedQueries.page(ports.readModels, { after, oldest, patterns, limit, newest: opts.newest ?? false });
  // Reading backwards, the extra row is the oldest one: there is more before the page, none after it.
  const entries = opts.newest ? rows.slice(-limit) : rows.slice(0, limit);
  const events = entries.map(({ position: _p, ...e }) => e);
  const latest = await feedQueries.latest(ports.readModels, patterns);
  return {
    status: 200,
    body: {
      events,
      cursor: events.at(-1)?.event_id ?? q.cursor ?? null,
      has_more: !opts.newest && rows.length > limit,
      freshness: {
        generated_at: now.toISOString(),
        latest_event_created_at: latest,
        lag_seconds: latest ? Math.max(0, Math.round((now.getTime() - Date.parse(latest)) / 1000)) : null,
        retention_days: FEED_RETENTION_DAYS,
      },
    },
    entries,
  };
}

/**
 * A publisher as the registry last validated it: its row, the last revalidation's result, the
 * agents its file authorizes and the properties it declares; undefined when it was never checked.
 */
export async function publisherRecord(ports: RegistryReadPorts, domain: string) {
  const rm = ports.readModels;
  const [publisher, result] = await Promise.all([publisherQueries.publisher(rm, domain), publisherQueries.lastResult(rm, domain)]);
  if (!publisher || !result) return undefined;
  const [agents, properties] = await Promise.all([publisherQueries.agents(rm, domain), publisherQueries.properties(rm, domain)]);
  return { publisher, result, agents, properties };
}
