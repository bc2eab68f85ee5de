import { Arg, Ctx, Int, Mutation, Query, Resolver } from 'type-graphql';
import { revalidatePublisher } from '../../application/publisher-revalidation';
import { getStoryboard, listStoryboards, publisherRecord, readFeed, type Answer } from '../../application/registry-reads';
import { isTransient } from '../../domain/adagents/events';
import { AppError, type ErrorCode } from '../../shared/errors';
import type { GraphQLContext } from '../context';
import { domainArg, requireAdmin } from './brands.resolver';
import { FindingSeverity, Publisher, RegistryFeedPage, Storyboard, StoryboardSummary, type DeclaredProperty, type StoryboardPhase } from './registry.type';

const CODE: Record<number, ErrorCode> = { 400: 'VALIDATION_ERROR', 404: 'NOT_FOUND', 410: 'INVALID_REQUEST', 500: 'UNAVAILABLE' };

/** A REST answer as GraphQL: the body, or its `{error}` as an error with a code and the argument at fault (by status). */
function unwrap(answer: Answer, fields: Partial<Record<number, string>> = {}): Record<string, unknown> {
  if (answer.status === 200) return answer.body;
  const message = typeof answer.body.message === 'string' ? `${String(answer.body.error)}: ${answer.body.message}` : String(answer.body.error);
  throw new AppError(CODE[answer.status] ?? 'INVALID_REQUEST', message, fields[answer.status]);
}

type Doc = Record<string, unknown>;
const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const trimmed = (v: unknown): string => (typeof v === 'string' ? v.trim() : '');
const docs = (v: unknown): Doc[] => (Array.isArray(v) ? v.filter((x): x is Doc => Boolean(x) && typeof x === 'object' && !Array.isArray(x)) : []);

function toProperty(p: Doc): DeclaredProperty {
  return {
    propertyId: text(p.property_id),
    propertyType: text(p.property_type),
    name: text(p.name),
    publisherDomain: text(p.publisher_domain),
    identifiers: docs(p.identifiers).flatMap((i) => (typeof i.type === 'string' && typeof i.value === 'string' ? [{ type: i.type, value: i.value }] : [])),
    tags: Array.isArray(p.tags) ? p.tags.filter((t): t is string => typeof t === 'string') : [],
  };
}

/** The spec's StoryboardDetail (as registry-reads completes it) as GraphQL's Storyboard. */
function toStoryboard(body: Doc): Storyboard {
  const s = body.storyboard as Doc;
  const kit = body.test_kit as Doc | undefined;
  const phases: StoryboardPhase[] = docs(s.phases).map((p, i) => ({
    id: text(p.id) ?? `phase_${i + 1}`,
    title: trimmed(p.title),
    narrative: trimmed(p.narrative),
    steps: docs(p.steps).map((st) => ({
      id: String(st.id ?? ''),
      title: trimmed(st.title),
      description: trimmed(st.description),
      expectedOutput: trimmed(st.expected_output),
      task: text(st.task),
      validationCount: Array.isArray(st.validations) ? st.validations.length : 0,
    })),
  }));
  return {
    id: String(s.id),
    title: trimmed(s.title),
    category: trimmed(s.category),
    summary: trimmed(s.summary),
    adcpVersion: String(body.adcp_version),
    requestedComplianceTarget: String(body.requested_compliance_target),
    interactionModel: trimmed((s.agent as Doc | undefined)?.interaction_model),
    phases,
    testKit: kit && typeof kit.id === 'string' ? { id: kit.id, name: text(kit.name), description: text(kit.description) } : null,
  };
}

/** The registry's read side over GraphQL (the same reads as the REST paths), and the admin's revalidation. */
@Resolver()
export class RegistryResolver {
  @Query(() => Storyboard, { description: 'A compliance storyboard with its phases and steps. Public.' })
  async storyboard(
    @Ctx() ctx: GraphQLContext,
    @Arg('id') id: string,
    @Arg('complianceTarget', () => String, { nullable: true, description: '3.1, 3.0, 3.1-rc, 3.1-beta or an exact bundled version (default: the newest line).' }) complianceTarget?: string,
  ): Promise<Storyboard> {
    const answer = await getStoryboard(ctx.app.ports, id, complianceTarget ?? undefined);
    return toStoryboard(unwrap(answer, { 400: String(answer.body.error).startsWith('id ') ? 'id' : 'complianceTarget', 404: 'id' }));
  }

  @Query(() => [StoryboardSummary], { description: 'The storyboards of the bundle a compliance target names, in bundle order. Public.' })
  async storyboards(
    @Ctx() ctx: GraphQLContext,
    @Arg('complianceTarget', () => String, { nullable: true, description: 'As for storyboard (default: the newest line).' }) complianceTarget?: string,
  ): Promise<StoryboardSummary[]> {
    return unwrap(await listStoryboards(ctx.app.ports, complianceTarget ?? undefined), { 400: 'complianceTarget' }).storyboards as StoryboardSummary[];
  }

  @Query(() => Publisher, { nullable: true, description: 'A publisher’s last adagents.json verdict with its findings, the agents it authorizes and the properties it declares (null: never revalidated). Public.' })
  async publisher(@Ctx() ctx: GraphQLContext, @Arg('domain') domain: string): Promise<Publisher | null> {
    return readPublisher(ctx, domainArg(domain));
  }

  @Mutation(() => Publisher, { description: 'Fetches https://{domain}/.well-known/adagents.json now, records its verdict and answers the publisher as it now reads (admin; once per 5 minutes per domain, 30 an hour per admin).' })
  async revalidatePublisher(@Ctx() ctx: GraphQLContext, @Arg('domain') domain: string): Promise<Publisher> {
    const principal = requireAdmin(ctx);
    const answer = await revalidatePublisher(ctx.app.revalidation, domain, principal.keyId);
    if (!answer.done) {
      if (answer.retryAfter !== undefined) throw new AppError('RATE_LIMITED', `${answer.error}; try again in ${answer.retryAfter} s`, 'domain');
      throw new AppError('VALIDATION_ERROR', answer.error, 'domain');
    }
    const publisher = await readPublisher(ctx, answer.result.domain);
    if (!publisher) throw new AppError('UNAVAILABLE', 'the verdict was recorded but cannot be read back yet; read it with publisher(domain)');
    return publisher;
  }

  @Query(() => RegistryFeedPage, { description: 'A page of the registry change feed (the REST feed’s entries, typed). Any valid key.' })
  async registryFeed(
    @Ctx() ctx: GraphQLContext,
    @Arg('cursor', () => String, { nullable: true, description: 'The cursor of the page before (an eventId): entries after it.' }) cursor?: string,
    @Arg('limit', () => Int, { nullable: true, defaultValue: 100, description: 'Entries per page, 1 to 10000 (each entry is priced as a point).' }) limit?: number,
    @Arg('types', () => [String], { nullable: true, description: 'Event types, a trailing * matching a prefix (publisher.*, brand.updated); default: all. At most 100.' }) types?: string[],
    @Arg('newest', () => Boolean, { nullable: true, description: 'The last `limit` entries after the cursor instead of the first (hasMore is then false): where a live view starts.' }) newest?: boolean,
  ): Promise<RegistryFeedPage> {
    if (!ctx.principal) throw new AppError('UNAUTHENTICATED', 'a Bearer API key is required');
    const answer = await readFeed(
      ctx.app.ports,
      { ...(cursor ? { cursor } : {}), ...(limit !== undefined && limit !== null ? { limit: String(limit) } : {}), ...(types?.length ? { types: types.join(',') } : {}) },
      { newest: newest ?? false },
    );
    const body = unwrap(answer, { 400: answer.body.error === 'Invalid cursor format. Must be a UUID.' ? 'cursor' : String(answer.body.error).startsWith('limit') ? 'limit' : 'types', 410: 'cursor' });
    const entries = (answer.entries ?? []).map((e) => ({ position: e.position, eventId: e.event_id, eventType: e.event_type, entityType: e.entity_type, entityId: e.entity_id, actor: e.actor, createdAt: e.created_at }));
    const f = body.freshness as { generated_at: string; latest_event_created_at: string | null; lag_seconds: number | null; retention_days: number };
    return {
      entries,
      cursor: text(body.cursor),
      hasMore: Boolean(body.has_more),
      lastPosition: entries.at(-1)?.position ?? null,
      freshness: { generatedAt: f.generated_at, latestEventCreatedAt: f.latest_event_created_at, lagSeconds: f.lag_seconds, retentionDays: f.retention_days },
    };
  }
}

async function readPublisher(ctx: GraphQLContext, domain: string): Promise<Publisher | null> {
  const record = await publisherRecord(ctx.app.ports, domain);
  if (!record) return null;
  const { publisher: p, result, agents, properties } = record;
  return {
    domain: p.domain,
    adagentsValid: Boolean(Number(p.adagents_valid)),
    checkedAt: p.checked_at,
    lastCheckTransient: isTransient(result),
    error: text(result.error),
    findings: [
      ...(result.issues?.errors ?? []).map((e) => ({ severity: FindingSeverity.ERROR, field: String(e.field), message: String(e.message), suggestion: null })),
      ...(result.issues?.warnings ?? []).map((w) => ({ severity: FindingSeverity.WARNING, field: String(w.field), message: String(w.message), suggestion: text(w.suggestion) })),
    ],
    discoveryMethod: p.discovery_method ?? text(result.discovery_method),
    authority: p.authority ?? text(result.authority),
    managerDomain: text(result.manager_domain),
    statusCode: typeof result.status_code === 'number' ? result.status_code : null,
    resolvedUrl: text(result.resolved_url),
    authorizedAgents: agents.map((a) => ({ url: a.agent_url, authorizedFor: a.authorized_for, authorizationType: a.authorization_type })),
    properties: properties.map(toProperty),
  };
}
