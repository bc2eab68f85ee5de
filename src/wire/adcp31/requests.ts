import { AppError } from '../../shared/errors';
import { isObject } from '../../shared/objects';
import { checkTargeting, type ReleaseRequestRules } from '../request-rules';
import { credentialInArgs } from './credentials-in-args';
import { adcp31Schemas } from './schemas';

type Obj = Record<string, unknown>;

/** `idempotency_key` as every 3.1 request schema declares it. */
const IDEMPOTENCY_KEY = /^[A-Za-z0-9_.:-]{16,255}$/;

/**
 * AdCP 3.1's request rules beyond 3.0's:
 * - `idempotency_key` is tolerated on every request (an envelope field, like `context`, `ext`,
 *   `adcp_version`), and on get_products it keys replay (3.1.19 release notes, #4399: "sellers
 *   MUST accept keyed calls and apply the replay contract"): its format is then checked first,
 *   before any replay is looked up (security.mdx, idempotency rule 1);
 * - sync_governance binds exactly one governance agent per account, `{url, authentication}`
 *   (account/sync-governance-request.json: `maxItems: 1`, "load-bearing"; no `categories`);
 * - a package's targeting overlay, kept and echoed, must be 3.1 targeting (a `signal_ref` is
 *   3.1's scoped object, for one);
 * - no credential in the arguments (`./credentials-in-args.ts`: CREDENTIAL_IN_ARGS).
 */
export const requestRules31: ReleaseRequestRules = {
  keyedReads: new Set(['get_products']),
  check(tool, args) {
    const smuggled = credentialInArgs(args);
    // The field names the path only, and the message is generic: neither may carry the credential.
    if (smuggled) throw new AppError('INVALID_REQUEST', 'authentication material belongs on the transport (Authorization header or a request signature), never in the arguments; rotate it if it was a real one', smuggled, { reason: 'credential_in_args', recovery: 'terminal' });
    if (tool === 'get_products' && args.idempotency_key !== undefined && (typeof args.idempotency_key !== 'string' || !IDEMPOTENCY_KEY.test(args.idempotency_key))) {
      throw new AppError('INVALID_REQUEST', 'idempotency_key must be 16-255 of A-Z a-z 0-9 _ . : -', 'idempotency_key');
    }
    if (tool === 'sync_governance' && Array.isArray(args.accounts)) checkOneGovernanceAgent(args.accounts);
    checkTargeting(tool, args, (schema, body) => adcp31Schemas().validate(schema, body), '3.1');
  },
};

function checkOneGovernanceAgent(accounts: unknown[]): void {
  accounts.forEach((entry, i) => {
    if (!isObject(entry) || !Array.isArray(entry.governance_agents)) return;
    if (entry.governance_agents.length > 1) {
      throw new AppError('INVALID_REQUEST', 'AdCP 3.1 binds exactly one governance agent to an account (it owns the whole plan lifecycle)', `accounts[${i}].governance_agents`);
    }
    const agent = entry.governance_agents[0] as Obj | undefined;
    if (isObject(agent) && agent.categories !== undefined) {
      throw new AppError('INVALID_REQUEST', 'governance agents have no categories in AdCP 3.1: the one agent governs every category', `accounts[${i}].governance_agents[0].categories`);
    }
  });
}
