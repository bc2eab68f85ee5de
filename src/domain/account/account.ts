import { createHash } from 'node:crypto';
import { AppError } from '../../shared/errors';
import { assertNever, type Decider } from '../decider';

/** AdCP account statuses (3.0 `account-status`). */
export type AccountStatus = 'active' | 'pending_approval' | 'rejected' | 'payment_required' | 'suspended' | 'closed';
export const ACCOUNT_STATUSES: readonly AccountStatus[] = ['active', 'pending_approval', 'rejected', 'payment_required', 'suspended', 'closed'];

/**
 * A buyer's account on this seller: the advertiser (brand) and who operates for it. Its id is
 * derived from the natural key, so `{brand, operator, sandbox}` and the id name the same account
 * and a sync is idempotent by construction. Sandbox accounts are for testing: the compliance
 * controller acts only on them, and nothing in them reaches a real ad server.
 */
export interface AccountTerms {
  readonly account_id: string;
  readonly owner: string;
  readonly name: string;
  readonly brand: { readonly domain: string; readonly brand_id?: string };
  readonly operator: string;
  readonly sandbox: boolean;
  readonly billing?: string;
  readonly payment_terms?: string;
}

/**
 * A governance agent the buyer registered on the account (AdCP `sync_governance`): the seller
 * consults it before committing a buy. The credential is what the seller presents to that agent,
 * so it is kept as given (it cannot be hashed) and never shown again.
 */
export interface GovernanceAgent {
  readonly url: string;
  readonly authentication: { readonly schemes: readonly string[]; readonly credentials: string };
  readonly categories?: readonly string[];
}

export type AccountEvent =
  | { readonly type: 'AccountSynced'; readonly data: AccountTerms & { readonly status: AccountStatus; readonly created: boolean; readonly at: string } }
  | { readonly type: 'AccountStatusChanged'; readonly data: { readonly account_id: string; readonly owner: string; readonly from: AccountStatus; readonly status: AccountStatus; readonly at: string } }
  | { readonly type: 'GovernanceAgentsSynced'; readonly data: { readonly account_id: string; readonly owner: string; readonly governance_agents: readonly GovernanceAgent[]; readonly at: string } };

export type AccountCommand =
  | { readonly type: 'SyncAccount'; readonly terms: AccountTerms; readonly now: string }
  | { readonly type: 'ChangeAccountStatus'; readonly status: AccountStatus; readonly now: string }
  | { readonly type: 'SyncGovernance'; readonly governanceAgents: readonly GovernanceAgent[]; readonly now: string };

export type AccountState =
  | { readonly status: 'none' }
  | { readonly status: AccountStatus; readonly terms: AccountTerms; readonly governance_agents?: readonly GovernanceAgent[] };

export const accountStream = (accountId: string) => `account-${accountId}`;

/** The id an owner's natural key names: stable, opaque, and distinct for sandbox and live. */
export function accountIdFor(owner: string, key: { brand: { domain: string; brand_id?: string }; operator: string; sandbox: boolean }): string {
  const material = [owner, key.brand.domain.toLowerCase(), key.brand.brand_id ?? '', key.operator.toLowerCase(), key.sandbox ? 'sandbox' : 'live'].join('\u0000');
  return `acct_${createHash('sha256').update(material).digest('base64url').slice(0, 22)}`;
}

/** What changing the terms of an existing account would change (for sync's `action`). */
function sameTerms(a: AccountTerms, b: AccountTerms): boolean {
  return a.billing === b.billing && a.payment_terms === b.payment_terms && a.name === b.name;
}

/** Statuses an account may move to from each status (the seller's side of onboarding). */
const NEXT: Record<AccountStatus, readonly AccountStatus[]> = {
  pending_approval: ['active', 'rejected'],
  active: ['suspended', 'payment_required', 'closed'],
  suspended: ['active', 'closed'],
  payment_required: ['active', 'suspended', 'closed'],
  rejected: [],
  closed: [],
};

export const accountDecider: Decider<AccountCommand, AccountEvent, AccountState> = {
  initialState: () => ({ status: 'none' }),
  decide(command, state) {
    switch (command.type) {
      case 'SyncAccount':
        if (state.status !== 'none' && sameTerms(state.terms, command.terms)) return [];
        return [{ type: 'AccountSynced', data: { ...command.terms, status: state.status === 'none' ? 'active' : state.status, created: state.status === 'none', at: command.now } }];
      case 'ChangeAccountStatus': {
        if (state.status === 'none') throw new AppError('ACCOUNT_NOT_FOUND', 'no such account', 'account_id');
        if (state.status === command.status) return [];
        if (!NEXT[state.status].includes(command.status)) {
          throw new AppError('INVALID_STATE', `an account that is ${state.status} cannot become ${command.status}`, 'status', { current_status: state.status });
        }
        return [{ type: 'AccountStatusChanged', data: { account_id: state.terms.account_id, owner: state.terms.owner, from: state.status, status: command.status, at: command.now } }];
      }
      case 'SyncGovernance':
        if (state.status === 'none') throw new AppError('ACCOUNT_NOT_FOUND', 'no such account', 'account');
        // Replace semantics: the list given is the account's list from now on.
        if (JSON.stringify(state.governance_agents ?? []) === JSON.stringify(command.governanceAgents)) return [];
        return [{ type: 'GovernanceAgentsSynced', data: { account_id: state.terms.account_id, owner: state.terms.owner, governance_agents: command.governanceAgents, at: command.now } }];
      default:
        return assertNever(command);
    }
  },
  evolve(state, event) {
    switch (event.type) {
      case 'AccountSynced': {
        const { status, created: _c, at: _at, ...terms } = event.data;
        return { ...(state.status !== 'none' && state.governance_agents ? { governance_agents: state.governance_agents } : {}), status, terms };
      }
      case 'AccountStatusChanged':
        return state.status === 'none' ? state : { ...state, status: event.data.status };
      case 'GovernanceAgentsSynced':
        return state.status === 'none' ? state : { ...state, governance_agents: event.data.governance_agents };
      default:
        return assertNever(event);
    }
  },
};
