import type { App } from '../../services';
import { publishedPortfolio } from '../../application/catalog';
import { pricingModel3 } from '../../wire/adcp3/answers';
import { CHANNEL_TO_ADCP3 } from '../../wire/requests';
import { SUPPORTED_MAJORS, SUPPORTED_VERSIONS } from '../../wire/version';
import { CONTROLLER_RELEASES, type ControllerRelease } from '../../application/sandbox/controller';
import { MINIMUM_AUDIENCE_SIZE } from '../../domain/audience/audience';
import { EVENT_TYPES } from '../../application/tasks/commerce-tasks';

/**
 * Specialism claims: exactly those the conformance suite proves for a seller configured this way
 * (test/conformance/storyboards.test.ts runs each claimed specialism's storyboards against it and
 * checks this list). The approval policy decides which seller this is: the same guaranteed create
 * waits for a human under the default rules and is confirmed at once under `never`.
 */
export function specialismsFor(approvalPolicy: App['config']['approvalPolicy'], signedRequests: boolean): string[] {
  const byPolicy: Record<typeof approvalPolicy, string[]> = {
    rules: ['audience-sync', 'governance-aware-seller', 'governance-spend-authority', 'sales-catalog-driven', 'sales-guaranteed', 'sales-non-guaranteed', 'sales-social'],
    never: ['governance-delivery-monitor', 'sales-broadcast-tv', 'sales-proposal-mode'],
    manual: [],
  };
  return [...byPolicy[approvalPolicy], ...(signedRequests ? ['signed-requests'] : [])];
}

/** How long an idempotency_key's answer is replayed (the records are events: they never expire here). */
export const REPLAY_TTL_SECONDS = 86_400;

/**
 * `get_adcp_capabilities`: exactly what this agent does, since the runner and buyers pick what
 * to exercise from it. Portfolio and pricing models come from the published catalog; the
 * controller scenarios are those of the controller the call's release runs (its codec narrows
 * them to what the release's schema may name).
 */
export async function capabilities(app: App, origin: string, controller: ControllerRelease = CONTROLLER_RELEASES['3.0']): Promise<Record<string, unknown>> {
  const { products, properties } = await publishedPortfolio(app.ports);
  const channels = [...new Set(products.flatMap((p) => p.channels.map((c) => CHANNEL_TO_ADCP3[c] ?? c)))];
  const pricingModels = [...new Set(products.flatMap((p) => p.pricing_options.map((o) => pricingModel3(o.pricing_model))))];
  const specialisms = specialismsFor(app.config.approvalPolicy, !!app.requestSigning);
  return {
    // The releases a call may pin with adcp_version (wire/version.ts negotiates); 3.0.6 leaves
    // `adcp` open, so a buyer without a pin, as VERSION_UNSUPPORTED tells it to ask, finds them too.
    adcp: { major_versions: [...SUPPORTED_MAJORS], supported_versions: [...SUPPORTED_VERSIONS], idempotency: { supported: true, replay_ttl_seconds: REPLAY_TTL_SECONDS } },
    // The creative protocol: formats, a library (sync, list), previews, and build_creative (a
    // template filled from the brief and the buyer's catalogs; no transformation of its creatives).
    // Governance: this gateway is also its buyers' campaign governance agent (sync_plans,
    // check_governance, report_plan_outcome, get_plan_audit_logs), and as a seller it consults the
    // agent a buyer registers (sync_governance) before committing a buy.
    supported_protocols: ['media_buy', 'creative', 'governance'],
    // Implicit accounts: the caller's key speaks for the brands and operators it declares with
    // sync_accounts, and a create names one (or none: the buyer's own). Products are browsed
    // without one. Sandbox accounts: sync_accounts with sandbox: true, any brand on a domain
    // reserved for examples (.example, .test, …), and an account_id not of this seller's issued
    // shape, which names the caller's own sandbox account (docs/mcp.md#accounts).
    account: { require_operator_auth: false, supported_billing: ['operator', 'agent', 'advertiser'], required_for_products: false, account_financials: true, sandbox: true },
    media_buy: {
      supported_pricing_models: pricingModels,
      reporting_delivery_methods: ['webhook'],
      // The features object is open: buyers (and @adcp/sdk) gate sync_audiences on audience_targeting.
      features: { inline_creative_management: false, property_list_filtering: false, catalog_management: true, audience_targeting: true, conversion_tracking: true },
      // sync_audiences: hashed identifiers matched on arrival (no latency), targetable once big enough.
      audience_targeting: {
        supported_identifier_types: ['hashed_email', 'hashed_phone'],
        supported_uid_types: ['rampid', 'id5', 'uid2', 'euid', 'pairid', 'maid'],
        minimum_audience_size: MINIMUM_AUDIENCE_SIZE,
        matching_latency_hours: { min: 0, max: 0 },
      },
      // sync_event_sources + log_event: server-to-server conversions, deduplicated by event_id per source.
      conversion_tracking: {
        multi_source_event_dedup: false,
        supported_event_types: EVENT_TYPES,
        supported_hashed_identifiers: ['hashed_email', 'hashed_phone'],
        supported_uid_types: ['rampid', 'id5', 'uid2', 'euid', 'pairid', 'maid'],
      },
      portfolio: {
        publisher_domains: properties.map((p) => p.publisher_domain),
        primary_channels: channels,
      },
    },
    creative: { has_creative_library: true, supports_compliance: false, supports_generation: true, supports_transformation: false },
    webhook_signing: { supported: true, profile: 'adcp/webhook-signing/v1', algorithms: ['ed25519'], legacy_hmac_fallback: true },
    ...(app.requestSigning ? { request_signing: app.requestSigning.capability } : {}),
    identity: { key_origins: { webhook_signing: origin } },
    ...(specialisms.length ? { specialisms } : {}),
    compliance_testing: { scenarios: [...controller.scenarios] },
    last_updated: new Date(app.clock().getTime()).toISOString(),
  };
}
