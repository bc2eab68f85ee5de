import type { Principal } from '../application/api-keys';
import type { LimitedRole } from '../config';
import type { BudgetVerdict, SharedBudgets } from './shared-budgets';
import { addressBudgetKey } from './address-key';

/** Who a limit counts against, and the names of their buckets in the shared budgets. */
export interface BudgetOwner {
  role: LimitedRole;
  /** Their request rate's bucket. */
  requests: string;
  /** Their GraphQL points' bucket. */
  points: string;
  /** Failed authentications from their address (meaningful for an address only). */
  authFailures: string;
}

// The same owner (and so the same bucket strings, whose hashes V8 keeps) for every request of a
// client: a bucket name built per request would be hashed again at each budget lookup.
const keyOwners = new Map<string, BudgetOwner>();
const addressOwners = new Map<string, BudgetOwner>();
const MAX_CACHED_OWNERS = 10_000;

function cachedOwner(cache: Map<string, BudgetOwner>, key: string, id: string, role: LimitedRole): BudgetOwner {
  let owner = cache.get(key);
  if (!owner) {
    if (cache.size >= MAX_CACHED_OWNERS) cache.clear();
    owner = { role, requests: `requests:${id}`, points: `graphql-points:${id}`, authFailures: `auth-failures:${key}` };
    cache.set(key, owner);
  }
  return owner;
}

/**
 * Who a limit counts against: the key (its role's limit), or, when anonymous, the client address
 * (its budget key: an IPv6 address's /64, see address-key.ts).
 */
export function budgetOwner(principal: Principal | null, ip: string): BudgetOwner {
  // A key's role never changes; its id is a UUID, never an address.
  if (principal) return cachedOwner(keyOwners, principal.keyId, `key:${principal.keyId}`, principal.role);
  const address = addressBudgetKey(ip);
  return cachedOwner(addressOwners, address, `ip:${address}`, 'anonymous');
}

/**
 * Credentials that fail to verify, counted per client address (shared by the instances): past
 * `perMinute`, each further failure from that address is answered 429 (and no longer counted)
 * until the minute ends, while a credential that verifies is still let through: many clients may
 * share one address (a NAT, a platform's egress), and one client's bad key must not lock out the
 * others. The API bindings and the OAuth sign-in form count into the same budget.
 */
export class AuthFailureThrottle {
  constructor(
    private readonly budgets: SharedBudgets,
    private readonly perMinute: number,
  ) {}

  /** Undefined while the address may try; else its verdict (the seconds until it may try again). */
  blocked(address: string): BudgetVerdict | undefined | Promise<BudgetVerdict | undefined> {
    const room = this.budgets.peek(budgetOwner(null, address).authFailures, this.perMinute, 60);
    return room instanceof Promise ? room.then((r) => (r.allowed ? undefined : r)) : room.allowed ? undefined : room;
  }

  record(address: string): void | Promise<void> {
    return this.budgets.spend(budgetOwner(null, address).authFailures, 1, 60);
  }
}
