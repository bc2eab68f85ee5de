import type { FastifyInstance } from 'fastify';
import { storyboardQueries } from '../../projections/storyboards';
import type { App } from '../app';
import { testKitIdOf } from '../domain/storyboards/bundle';
import { resolveTarget } from '../domain/storyboards/versions';

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

/** `GET /api/storyboards/{id}` (spec §4.1; ids with `/` arrive URL-encoded). Errors are `{error}`. */
export function registerStoryboardRoutes(fastify: FastifyInstance, app: App): void {
  fastify.get<{ Params: { id: string }; Querystring: { compliance_target?: unknown } }>('/api/storyboards/:id', async (req, reply) => {
    try {
      const raw = req.query.compliance_target;
      const requested = typeof raw === 'string' ? raw.trim() : undefined;
      const bundles = await storyboardQueries.bundles(app.readModels);
      // A line (3.1, 3.1-rc) or the default picks among bundles that loaded; an exact version
      // names its bundle even when it is broken, and that is a 500.
      const exact = requested && bundles.some((b) => b.adcp_version === requested) ? requested : undefined;
      const version = exact ?? resolveTarget(requested || undefined, bundles.filter((b) => b.state === 'ready').map((b) => b.adcp_version));
      if (!version) return reply.status(400).send({ error: INVALID_TARGET });
      if (bundles.find((b) => b.adcp_version === version)?.state !== 'ready') return reply.status(500).send({ error: 'Failed to get storyboard' });
      const storyboard = await storyboardQueries.storyboard(app.readModels, version, req.params.id);
      if (!storyboard) return reply.status(404).send({ error: 'Storyboard not found' });
      const kitId = testKitIdOf(storyboard);
      const kit = kitId ? await storyboardQueries.testKit(app.readModels, version, kitId) : undefined;
      return reply.send({
        adcp_version: version,
        requested_compliance_target: requested || version.split('.').slice(0, 2).join('.'),
        storyboard: storyboardDetail(storyboard),
        ...(kit ? { test_kit: kit } : {}),
      });
    } catch (err) {
      req.log.error({ err }, 'storyboard lookup failed');
      return reply.status(500).send({ error: 'Failed to get storyboard' });
    }
  });
}
