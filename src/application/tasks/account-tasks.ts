import { z } from 'zod';
import { accountQueries } from '../../../projections/accounts';
import { accountDecider, accountStream, ACCOUNT_STATUSES, type AccountTerms } from '../../domain/account/account';
import { AppError } from '../../shared/errors';
import { isPlaceholderAgent, resolveAccount, termsFor } from '../accounts';
import { isOwnAgent } from '../governance/consult';
import { assertDeliverableUrl } from '../../shared/url-guard';
import { publicId } from '../../shared/ids';
import { handleCommand, loadState } from '../command-handler';
import { withIdempotency } from '../idempotency';
import { paginationInput, idempotencyKeyInput } from '../validation';
import { defineTask, type TaskContext } from './context';

const domain = z.string().regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i, 'must be a domain name');

const accountInput = z
  .object({
    brand: z.object({ domain, brand_id: z.string().min(1).max(255).optional() }).passthrough(),
    operator: domain,
    billing: z.enum(['operator', 'agent', 'advertiser']).optional(),
    payment_terms: z.string().min(1).max(64).optional(),
    sandbox: z.boolean().optional(),
  })
  .passthrough();

const syncInput = z
  .object({
    accounts: z.array(accountInput).min(1).max(100),
    dry_run: z.boolean().optional(),
    idempotency_key: idempotencyKeyInput,
  })
  .passthrough();

/** How an account appears on the wire (AdCP `core/account.json`). */
export function accountView(terms: AccountTerms, status: string) {
  return {
    account_id: publicId(terms.account_id),
    name: terms.name,
    status,
    brand: terms.brand,
    operator: terms.operator,
    account_scope: 'operator_brand',
    ...(terms.billing ? { billing: terms.billing } : {}),
    ...(terms.payment_terms ? { payment_terms: terms.payment_terms } : {}),
    sandbox: terms.sandbox,
  };
}

export const syncAccounts = defineTask({
  mutating: true,
  description: 'Establishes the caller\'s accounts (brand + operator): created, updated or unchanged, each with its status.',
  input: syncInput,
  async run(input, ctx) {
    const owner = ctx.principal.org;
    return withIdempotency(ctx.ports.store, owner, 'sync_accounts', input as Record<string, unknown>, async (attempt) => {
      const now = ctx.ports.clock().toISOString();
      const cmdCtx = { now, principal: ctx.principal.keyId, correlationId: ctx.requestId, idempotency: attempt };
      const out = [];
      for (const a of input.accounts) {
        const terms = termsFor(owner, a, { ...(a.billing ? { billing: a.billing } : {}), ...(a.payment_terms ? { payment_terms: a.payment_terms } : {}) });
        const stream = accountStream(terms.account_id);
        if (input.dry_run) {
          const { state } = await loadState(ctx.ports.store, stream, accountDecider);
          const events = accountDecider.decide({ type: 'SyncAccount', terms, now }, state);
          out.push({ ...accountView(terms, state.status === 'none' ? 'active' : state.status), action: state.status === 'none' ? 'created' : events.length ? 'updated' : 'unchanged' });
          continue;
        }
        const { state, events } = await handleCommand(ctx.ports.store, stream, accountDecider, { type: 'SyncAccount', terms, now }, cmdCtx);
        const created = events.some((e) => e.type === 'AccountSynced' && e.data.created);
        const status = state.status === 'none' ? 'active' : state.status;
        out.push({ ...accountView(terms, status), action: created ? 'created' : events.length ? 'updated' : 'unchanged' });
      }
      return { accounts: out, ...(input.dry_run ? { dry_run: true } : {}) };
    });
  },
});

const listInput = z
  .object({
    status: z.enum(ACCOUNT_STATUSES as unknown as [string, ...string[]]).optional(),
    sandbox: z.boolean().optional(),
    pagination: paginationInput.optional(),
  })
  .passthrough();

export const listAccounts = defineTask({
  description: 'The caller\'s accounts on this seller, paged by cursor.',
  input: listInput,
  async run(input, ctx) {
    const limit = input.pagination?.max_results ?? 50;
    const after = input.pagination?.cursor;
    if (after !== undefined && !/^[\w.:~-]{1,200}$/.test(after)) throw new AppError('VALIDATION_ERROR', 'cursor is not one this agent issued', 'pagination.cursor');
    const rows = await accountQueries.list(ctx.ports.readModels, ctx.principal.org, { status: input.status, sandbox: input.sandbox, after, limit: limit + 1 });
    const page = rows.slice(0, limit);
    const hasMore = rows.length > limit;
    return {
      accounts: page.map((r) => accountView(r.terms, r.status)),
      pagination: { has_more: hasMore, ...(hasMore ? { cursor: page[page.length - 1]!.account_id } : {}) },
    };
  },
});

const governanceAgentInput = z
  .object({
    url: z.string().max(2048),
    authentication: z.object({ schemes: z.array(z.enum(['Bearer', 'HMAC-SHA256'])).length(1), credentials: z.string().min(32, 'must be at least 32 characters').max(4096) }).strict(),
    categories: z.array(z.string().regex(/^[a-z][a-z0-9_]*$/, 'must be snake_case').max(64)).max(20).optional(),
  })
  .strict();

const syncGovernanceInput = z
  .object({
    accounts: z.array(z.object({ account: z.record(z.string(), z.unknown()), governance_agents: z.array(governanceAgentInput).min(1).max(10) }).strict()).min(1).max(100),
    idempotency_key: idempotencyKeyInput,
  })
  .passthrough();

/**
 * A governance agent URL a buyer registers: this gateway's own MCP endpoint, or an https agent
 * at a public address (checked again at connect time, which is the guard that counts).
 */
async function assertGovernanceAgentUrl(ctx: TaskContext, url: string, field: string): Promise<void> {
  if (isOwnAgent(url, [ctx.origin, ctx.ports.settings.publicUrl])) return;
  try {
    await assertDeliverableUrl(url, field, ctx.ports.settings.allowPrivateWebhookUrls);
  } catch (err) {
    throw err instanceof AppError ? new AppError('VALIDATION_ERROR', err.message.replace(/^webhook URL/, 'governance agent URL'), field) : err;
  }
}

export const syncGovernance = defineTask({
  mutating: true,
  description: 'Registers the governance agents this seller consults (check_governance) before committing buys on each account; replaces the account\'s list.',
  input: syncGovernanceInput,
  async run(input, ctx) {
    return withIdempotency(ctx.ports.store, ctx.principal.org, 'sync_governance', input as Record<string, unknown>, async (attempt) => {
      const now = ctx.ports.clock().toISOString();
      const cmdCtx = { now, principal: ctx.principal.keyId, correlationId: ctx.requestId, idempotency: attempt };
      const out = [];
      for (const [i, entry] of input.accounts.entries()) {
        try {
          const account = await resolveAccount(ctx, entry.account, `accounts[${i}].account`);
          for (const [j, agent] of entry.governance_agents.entries()) {
            const field = `accounts[${i}].governance_agents[${j}].url`;
            if (isPlaceholderAgent(agent.url)) {
              if (!account.sandbox) throw new AppError('VALIDATION_ERROR', 'governance agent URL is on a reserved test domain, which no live account can consult; only a sandbox account may name a placeholder agent', field);
              continue;
            }
            await assertGovernanceAgentUrl(ctx, agent.url, field);
          }
          const governanceAgents = entry.governance_agents.map((a) => ({ url: a.url, authentication: { schemes: a.authentication.schemes, credentials: a.authentication.credentials }, ...(a.categories ? { categories: a.categories } : {}) }));
          await handleCommand(ctx.ports.store, accountStream(account.account_id), accountDecider, { type: 'SyncGovernance', governanceAgents, now }, cmdCtx);
          // The credential is write-only: never echoed.
          out.push({ account: entry.account, status: 'synced', governance_agents: governanceAgents.map(({ url, categories }) => ({ url, ...(categories ? { categories } : {}) })) });
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          out.push({ account: entry.account, status: 'failed', errors: [{ code: err.code, message: err.message, ...(err.field ? { field: err.field } : {}) }] });
        }
      }
      return { accounts: out };
    });
  },
});
