/**
 * Which of the official AdCP storyboards (`@adcp/sdk` 6.11.0, AdCP 3.0.6) this gateway is held to,
 * and what a run of them needs besides the runner. One list, read by `adcp-gateway conformance`
 * and by test/conformance/storyboards.test.ts.
 */

/**
 * Every storyboard `adcp storyboard list` shows for a `media_buy_seller`, and the universal ones
 * that apply, for a seller with the default approval rules (a product flagged requires_approval,
 * or a budget over the catalog's threshold, waits for the seller).
 */
export const STORYBOARDS = [
  'capability_discovery',
  'deterministic_testing',
  'error_compliance',
  'idempotency',
  'schema_validation',
  'security_baseline',
  'v3_envelope_integrity',
  'webhook_emission',
  'pagination_integrity',
  'pagination_integrity_creative_formats',
  'pagination_integrity_list_accounts',
  'get_media_buys_pagination_integrity',
  'media_buy_seller',
  'media_buy_seller/create_media_buy_async',
  'media_buy_seller/creative_fate_after_cancellation',
  'media_buy_seller/delivery_reporting',
  'media_buy_seller/invalid_transitions',
  'media_buy_seller/inventory_list_no_match',
  'media_buy_seller/inventory_list_targeting',
  'media_buy_seller/pending_creatives_to_start',
  'media_buy_seller/refine_products',
  'media_buy_state_machine',
  'sales_non_guaranteed',
  'sales_guaranteed',
  'creative_sales_agent',
  'audience_sync',
  'sales_social',
  'governance_aware_seller',
  'media_buy_seller/governance_approved',
  'media_buy_seller/governance_conditions',
  'media_buy_seller/governance_denied',
  'media_buy_seller/governance_denied_recovery',
  'governance_spend_authority',
  'governance_spend_authority/denied',
  'sales_catalog_driven',
] as const;

/**
 * The storyboards describe two kinds of seller that no single configuration can be: the same
 * guaranteed create (same products, budgets and account) must wait for a human IO signature in
 * sales_guaranteed and be confirmed in the answer in creative_generative/seller. These describe a
 * seller that confirms every order at once (APPROVAL_POLICY=never); against the default approval
 * rules their guaranteed creates wait for the seller.
 */
export const CONFIRMING_SELLER_STORYBOARDS = [
  'sales_broadcast_tv',
  'creative_generative/seller',
  'media_buy_seller/measurement_terms_rejected',
  // Proposal mode bundles measurement_terms_rejected: the same seller.
  'media_buy_seller/proposal_finalize',
  'sales_proposal_mode',
  // Their creates are expected to confirm at once (a media_buy_id to monitor, or to report to governance).
  'governance_delivery_monitor',
  'media_buy_governance_escalation',
] as const;

/**
 * Storyboards that register "the buyer's governance agent" as `$context.governance_agent_url`,
 * which the `adcp` CLI cannot set (adcontextprotocol/adcp#3913); the SDK's runner, called
 * programmatically, takes it as a context value.
 */
export function needsGovernanceAgent(id: string): boolean {
  return /governance/.test(id);
}

/**
 * What `adcp-gateway conformance` runs by default: every storyboard above, against whatever seller
 * the gateway is (the confirming-seller ones fail against the default approval rules; see
 * docs/conformance.md). The governance storyboards included, with the gateway's own governance agent
 * as the buyer's.
 */
export const DEFAULT_STORYBOARDS: readonly string[] = [...STORYBOARDS, ...CONFIRMING_SELLER_STORYBOARDS];

/**
 * Storyboards of the bundled tree that apply to no configuration of this gateway as a seller, or
 * need one the command cannot make, and why. Shown by `conformance --help` and in docs/conformance.md.
 */
export const LEFT_OUT: Readonly<Record<string, string>> = {
  pagination_integrity_property_lists: 'pages list_property_lists: property lists are not a capability this agent declares',
  pagination_integrity_content_standards: 'pages list_content_standards: content standards are not declared',
  pagination_integrity_collection_lists: 'pages list_collection_lists: collection lists are not declared',
  get_signals_pagination_integrity: 'pages get_signals: the signals protocol is not declared',
  signed_requests:
    'needs a gateway configured with the test kit\'s signing keys (REQUEST_SIGNERS_FILE, test-kits/signed-requests-runner.yaml); test/conformance/storyboards.test.ts runs it on one',
};

/**
 * Storyboards whose prerequisites say the caller already has an active account on the seller
 * (audience_sync: "the account must already exist and be active", and its first stateful step
 * lists accounts before any is made): the buyer's account is onboarded first (`sync_accounts`),
 * as the operator would have for a real buyer.
 */
export const ONBOARDED: Readonly<Record<string, { brand: { domain: string }; operator: string }>> = {
  audience_sync: { brand: { domain: 'acmeoutdoor.example' }, operator: 'pinnacle-agency.example' },
};

/**
 * Inventory a storyboard buys without seeding or discovering it (governance_conditions buys
 * `outdoor_ctv_q2` and governance_delivery_monitor `sports_ctv_q2` at `cpm_guaranteed`,
 * sales_catalog_driven `local_display_dynamic` at `cpm_standard`, which no fixture of theirs
 * defines), and formats a storyboard syncs and previews as the seller's own (creative_sales_agent's
 * `native_post`): seeded in the buyer's sandbox first (`comply_test_controller` seed_product,
 * seed_creative_format), as the seller's inventory and formats the storyboards presume.
 */
export const PRESEEDED: Readonly<Record<string, readonly Record<string, unknown>[]>> = {
  'media_buy_seller/governance_conditions': [
    {
      scenario: 'seed_product',
      params: {
        product_id: 'outdoor_ctv_q2',
        fixture: { delivery_type: 'guaranteed', channels: ['ctv'], format_ids: [{ id: 'video_30s' }], pricing_options: [{ pricing_option_id: 'cpm_standard', pricing_model: 'cpm', currency: 'USD', fixed_price: 30 }] },
      },
    },
  ],
  sales_catalog_driven: [
    {
      scenario: 'seed_product',
      params: {
        product_id: 'local_display_dynamic',
        fixture: { delivery_type: 'non_guaranteed', channels: ['display'], format_ids: [{ id: 'display_300x250' }], pricing_options: [{ pricing_option_id: 'cpm_standard', pricing_model: 'cpm', currency: 'USD', fixed_price: 9 }] },
      },
    },
  ],
  // A publisher's native post format, which the storyboard syncs and previews under a placeholder
  // agent; the demo catalog has none (sync_creatives and preview_creative take a format by one
  // rule: one the seller lacks is refused by both).
  creative_sales_agent: [
    {
      scenario: 'seed_creative_format',
      params: {
        format_id: 'native_post',
        fixture: {
          name: 'Native post',
          type: 'native',
          assets: [
            { asset_id: 'headline', asset_type: 'text', required: true },
            { asset_id: 'body', asset_type: 'text', required: false },
            { asset_id: 'image', asset_type: 'image', required: true, requirements: { min_width: 1200, max_width: 1200, min_height: 628, max_height: 628 } },
            { asset_id: 'click_url', asset_type: 'url', required: false },
          ],
        },
      },
    },
  ],
  governance_delivery_monitor: [
    {
      scenario: 'seed_product',
      params: {
        product_id: 'sports_ctv_q2',
        fixture: { delivery_type: 'guaranteed', channels: ['ctv'], format_ids: [{ id: 'video_30s' }], pricing_options: [{ pricing_option_id: 'cpm_guaranteed', pricing_model: 'cpm', currency: 'USD', fixed_price: 45 }] },
      },
    },
  ],
};
