import { accountDecider, accountStream, ACCOUNT_STATUSES, type AccountStatus } from '../../domain/account/account';
import { AppError } from '../../shared/errors';
import { isObject } from '../../shared/objects';
import { ownerScopedId, publicId } from '../../shared/ids';
import { resolveAccount } from '../accounts';
import { handleCommand, loadState, type CommandContext } from '../command-handler';
import type { TaskContext } from '../tasks/context';
import { ControllerError, requireString } from './errors';
import { untilProjected } from '../projected';

type Obj = Record<string, unknown>;

/**
 * AdCP 3.1's `seed_account`: a sandbox account of the caller's under the id the test names, as
 * a storyboard's fixtures expect it (`{account_id, fixture?}`), then usable by every task that
 * takes an `account` and by force_account_status. It is the fixture account a task naming that id
 * would provision (application/accounts.ts), made ahead of time and put in the fixture's
 * `status`. Seeding it again with the same fixture answers `existing`; a fixture that diverges
 * from the account is refused (a test changes state with force_*, never by re-seeding), and so is
 * an id that names a live account or has the shape of the ids this seller issues.
 */
export async function seedAccount(ctx: TaskContext, params: Obj, cmd: CommandContext): Promise<Obj> {
  const accountId = requireString(params, 'account_id');
  if (!/^[\w.:-]{1,128}$/.test(accountId)) throw new ControllerError('INVALID_PARAMS', 'params.account_id must be 1-128 of A-Z a-z 0-9 _ . : -');
  const fixture = params.fixture === undefined ? {} : params.fixture;
  if (!isObject(fixture)) throw new ControllerError('INVALID_PARAMS', 'params.fixture must be an object');
  if (fixture.sandbox !== undefined && fixture.sandbox !== true) throw new ControllerError('INVALID_PARAMS', 'params.fixture.sandbox must be true: the controller seeds sandbox accounts only');
  const status = fixture.status ?? 'active';
  if (typeof status !== 'string' || !(ACCOUNT_STATUSES as readonly string[]).includes(status)) throw new ControllerError('INVALID_PARAMS', `params.fixture.status must be one of ${ACCOUNT_STATUSES.join(', ')}`);
  const before = await accountByFixtureId(ctx, accountId);
  let account;
  try {
    account = await resolveAccount(ctx, { account_id: accountId });
  } catch (err) {
    if (err instanceof AppError) throw new ControllerError('INVALID_PARAMS', `params.account_id: ${err.message} (a seeded account's id must not have the shape of the ids this seller issues)`);
    throw err;
  }
  if (!account.sandbox) throw new ControllerError('FORBIDDEN', `account ${accountId} is live`);
  if (before) {
    if (account.status !== status) throw new ControllerError('INVALID_PARAMS', `account ${accountId} is already seeded with status ${account.status}, not ${status}: force_account_status changes it`, account.status);
    return { success: true, previous_state: 'existing', current_state: account.status, message: `account ${accountId} was already seeded` };
  }
  if (status !== 'active') {
    await handleCommand(ctx.ports.store, accountStream(account.account_id), accountDecider, { type: 'ChangeAccountStatus', status: status as AccountStatus, now: cmd.now }, cmd);
  }
  await untilProjected(ctx.ports);
  return { success: true, message: `sandbox account ${publicId(account.account_id)} seeded (${status})` };
}

/** Whether the caller already has the account a fixture id names (resolveAccount would make it otherwise). */
async function accountByFixtureId(ctx: TaskContext, accountId: string): Promise<boolean> {
  for (const id of [accountId, ownerScopedId(ctx.principal.org, accountId)]) {
    const { state } = await loadState(ctx.ports.store, accountStream(id), accountDecider);
    if (state.status !== 'none' && state.terms.owner === ctx.principal.org) return true;
  }
  return false;
}
