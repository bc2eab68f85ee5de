import { isObject } from '../../shared/objects';

type Obj = Record<string, unknown>;

/**
 * `sync_governance` in AdCP 3.1 (account/sync-governance-response.json): each account's one
 * governance agent as `{url}` (3.1 dropped 3.0's `categories`; its request rules refuse them).
 */
export function syncGovernance31(r: Obj): Obj {
  if (!Array.isArray(r.accounts)) return r;
  return {
    ...r,
    accounts: r.accounts.map((a: Obj) => (Array.isArray(a.governance_agents) ? { ...a, governance_agents: a.governance_agents.map((g: unknown) => (isObject(g) ? { url: g.url } : g)) } : a)),
  };
}

/**
 * `get_adcp_capabilities` in AdCP 3.1: `media_buy.governance_aware` declares what this seller
 * does with the agent sync_governance registers (consults it with check_governance before
 * committing a buy, and answers GOVERNANCE_DENIED when it denies: application/governance), so
 * 3.1's runners grade the governance-denial storyboards; 3.0's capabilities have no such field.
 */
export function governanceAware31(declared: Obj): Obj {
  return isObject(declared.media_buy) ? { ...declared, media_buy: { ...declared.media_buy, governance_aware: true } } : declared;
}
