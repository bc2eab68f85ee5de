import { accountQueries, type AccountRow } from '../../projections/accounts';
import { accountDecider, accountIdFor, accountStream, type AccountTerms } from '../domain/account/account';
import { AppError } from '../shared/errors';
import { handleCommand, loadState } from './command-handler';
import { ownerScopedId } from '../shared/ids';
import type { TaskContext } from './tasks/context';

/** AdCP's account reference: by id, or by natural key (brand + operator, optionally sandbox). */
export type AccountRef = { account_id: string } | { brand: { domain: string; brand_id?: string }; operator: string; sandbox?: boolean };

/** The shape of the ids this seller issues (`accountIdFor`). */
const ISSUED_ID = /^acct_[A-Za-z0-9_-]{22}$/;

export interface ResolvedAccount {
  account_id: string;
  sandbox: boolean;
  status: string;
}

/**
 * Domains reserved for examples and tests (RFC 2606, RFC 6761): no real advertiser or agency can
 * own one, so an account naming one is a sandbox account whether or not the request says so.
 */
export function isReservedTestDomain(domain: string): boolean {
  const d = domain.toLowerCase().replace(/\.$/, '');
  return /(^|\.)(example|test|invalid|localhost)$/.test(d) || /(^|\.)example\.(com|net|org)$/.test(d);
}

/**
 * An agent URL on a reserved test domain: it cannot exist on any network, so it is a scripted
 * test's placeholder. A sandbox account may register one as its governance agent (AdCP's own
 * storyboards register `governance.pinnacle-agency.example`: kept and shown, not consulted; a
 * live account's is refused), and a creative format named under one stands for this seller's own
 * under a sandbox account (formats.ts).
 */
export function isPlaceholderAgent(url: string): boolean {
  return URL.canParse(url) && isReservedTestDomain(new URL(url).hostname);
}

/** The terms a natural key names (a sync adds billing and payment terms). */
export function termsFor(owner: string, key: { brand: { domain: string; brand_id?: string }; operator: string; sandbox?: boolean }, extra: Partial<AccountTerms> = {}): AccountTerms {
  const brand = { domain: key.brand.domain.toLowerCase(), ...(key.brand.brand_id ? { brand_id: key.brand.brand_id } : {}) };
  const sandbox = key.sandbox === true || isReservedTestDomain(brand.domain) || isReservedTestDomain(key.operator);
  return {
    account_id: accountIdFor(owner, { brand, operator: key.operator, sandbox }),
    owner,
    name: `${brand.domain}${brand.brand_id ? `/${brand.brand_id}` : ''} via ${key.operator.toLowerCase()}${sandbox ? ' (sandbox)' : ''}`,
    brand,
    operator: key.operator.toLowerCase(),
    sandbox,
    ...extra,
  };
}

/**
 * The caller's account a request names. An id must be one of the caller's accounts, or else not
 * of the shape this seller issues: such an id names a test fixture (AdCP storyboards name
 * accounts like `acct_pagination_integrity_formats`), provisioned as a sandbox account. A natural
 * key names the account `sync_accounts` made for it; a sandbox key (`sandbox: true`, or a brand
 * or operator on a reserved test domain) the caller never synced is provisioned on first use
 * (testing needs no onboarding), a live one is ACCOUNT_NOT_FOUND.
 * Another buyer's account is indistinguishable from one that does not exist.
 */
export async function resolveAccount(ctx: TaskContext, ref: unknown, field = 'account'): Promise<ResolvedAccount> {
  const owner = ctx.principal.org;
  if (typeof ref !== 'object' || ref === null || Array.isArray(ref)) throw new AppError('INVALID_REQUEST', 'account must be {account_id} or {brand, operator}', field);
  const r = ref as Record<string, unknown>;
  let row: AccountRow | undefined;
  if (typeof r.account_id === 'string') {
    row = (await accountQueries.byId(ctx.ports.readModels, owner, r.account_id)) ?? (await accountQueries.byId(ctx.ports.readModels, owner, ownerScopedId(owner, r.account_id)));
    if (!row) {
      // An id of the shape this seller issues is a real account's (a typo must not land in a sandbox).
      if (ISSUED_ID.test(r.account_id)) throw new AppError('ACCOUNT_NOT_FOUND', 'no account of yours has this account_id', `${field}.account_id`);
      return provisionFixtureAccount(ctx, r.account_id);
    }
  } else {
    const brand = r.brand as { domain?: unknown; brand_id?: unknown } | undefined;
    if (typeof brand?.domain !== 'string' || typeof r.operator !== 'string') {
      throw new AppError('INVALID_REQUEST', 'account must be {account_id} or {brand: {domain}, operator}', typeof brand?.domain !== 'string' ? `${field}.brand.domain` : `${field}.operator`);
    }
    const terms = termsFor(owner, { brand: { domain: brand.domain, ...(typeof brand.brand_id === 'string' ? { brand_id: brand.brand_id } : {}) }, operator: r.operator, sandbox: r.sandbox === true });
    row = await accountQueries.byId(ctx.ports.readModels, owner, terms.account_id);
    if (!row) {
      if (!terms.sandbox) {
        throw new AppError('ACCOUNT_NOT_FOUND', `no account for brand ${terms.brand.domain} operated by ${terms.operator}; call sync_accounts first`, field, { recovery: 'correctable' });
      }
      const now = ctx.ports.clock().toISOString();
      await handleCommand(ctx.ports.store, accountStream(terms.account_id), accountDecider, { type: 'SyncAccount', terms, now }, { now, principal: ctx.principal.keyId, correlationId: ctx.requestId });
      return { account_id: terms.account_id, sandbox: true, status: 'active' };
    }
  }
  return { account_id: row.account_id, sandbox: row.terms.sandbox, status: row.status };
}

/**
 * Fixture accounts: a compliance test may name an account id it never synced
 * (`acct_pagination_…`); it becomes a sandbox account of the caller, stored under the caller
 * (`<id>~<owner tag>`, shown as `<id>`) so other buyers may use the same name.
 */
export async function provisionFixtureAccount(ctx: TaskContext, accountId: string): Promise<ResolvedAccount> {
  if (!/^[\w.:-]{1,128}$/.test(accountId)) throw new AppError('ACCOUNT_NOT_FOUND', 'no account of yours has this account_id', 'account.account_id');
  // Kept under the caller, like forced task ids: two buyers may name the same fixture.
  const stored = ownerScopedId(ctx.principal.org, accountId);
  const stream = accountStream(stored);
  const { state } = await loadState(ctx.ports.store, stream, accountDecider);
  if (state.status !== 'none') return { account_id: stored, sandbox: state.terms.sandbox, status: state.status };
  const terms: AccountTerms = { account_id: stored, owner: ctx.principal.org, name: `${accountId} (sandbox fixture)`, brand: { domain: 'fixture.invalid' }, operator: 'fixture.invalid', sandbox: true };
  const now = ctx.ports.clock().toISOString();
  await handleCommand(ctx.ports.store, stream, accountDecider, { type: 'SyncAccount', terms, now }, { now, principal: ctx.principal.keyId, correlationId: ctx.requestId });
  return { account_id: stored, sandbox: true, status: 'active' };
}
