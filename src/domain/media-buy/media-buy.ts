import { AppError } from '../../shared/errors';
import { assertNever, type Decider } from '../decider';

/** Lifecycle: pending → active ⇄ paused → completed | canceled; pending → rejected. */
export type MediaBuyStatus = 'pending' | 'active' | 'paused' | 'completed' | 'canceled' | 'rejected';

/** The statuses a buy never leaves: no delivery, no reports after the final one. */
export const ENDED_STATUSES: ReadonlySet<string> = new Set<MediaBuyStatus>(['completed', 'canceled', 'rejected']);

export interface PackageTerms {
  readonly package_id: string;
  readonly buyer_ref?: string;
  readonly product_id: string;
  readonly pricing_option_id: string;
  readonly pricing_model: string;
  /** CPM (fixed or bid) or the flat fee, in `currency`. */
  readonly rate: number;
  readonly currency: string;
  readonly budget: number;
  readonly bid_price?: number;
  readonly targeting_overlay?: Record<string, unknown>;
  /** Billing measurement and makegood terms agreed for this package (AdCP `measurement_terms`). */
  readonly measurement_terms?: Record<string, unknown>;
  /** Catalogs of the buyer's (sync_catalogs) whose items this package's dynamic creatives show. */
  readonly catalogs?: readonly { readonly catalog_id: string; readonly type?: string }[];
  readonly creative_ids: readonly string[];
  /** Held by the buyer: the package delivers nothing until resumed (the buy's status is unchanged). */
  readonly paused?: boolean;
  /** Canceled by the buyer: irreversible; the package delivers nothing more and accepts no changes. */
  readonly canceled?: boolean;
}

export interface MediaBuyTerms {
  readonly media_buy_id: string;
  readonly owner: string;
  readonly buyer_ref: string;
  /** The buyer's account it was bought under (AdCP 3.0 `account`), when the request named one. */
  readonly account_id?: string;
  /** Bought under a sandbox account: test traffic, open to the compliance controller. */
  readonly sandbox?: boolean;
  /** Bought by an AdCP 3.0 caller (MCP, A2A): its webhooks are signed for 3.0 receivers. */
  readonly wire?: 'adcp3';
  readonly brand_manifest: Record<string, unknown>;
  readonly packages: readonly PackageTerms[];
  /** The proposal this buy accepted, when it was bought that way. */
  readonly proposal_id?: string;
  readonly start_time: string;
  /**
   * The buyer asked to start "asap": `start_time` is the submission time until the seller approves,
   * then the approval's (a buy that waited two days for its IO starts when approved, not two days
   * earlier). Absent on buys with a scheduled start, and on buys recorded before this was kept.
   */
  readonly start_asap?: boolean;
  readonly end_time: string;
  readonly currency: string;
  readonly total_budget: number;
  readonly push_notification_config?: Record<string, unknown>;
  readonly reporting_webhook?: Record<string, unknown>;
  /**
   * The buyer's governance agent's verdict on this buy, when its account has one: the plan, the
   * check, the conditions it was approved on, and the governance_context forwarded on later checks.
   */
  readonly governance?: {
    readonly plan_id: string;
    readonly check_id: string;
    readonly status: 'approved' | 'conditions';
    readonly governance_context?: string;
    readonly conditions?: readonly unknown[];
    readonly agent_url: string;
    readonly own?: boolean;
    readonly caller?: string;
  };
}

export type MediaBuyEvent =
  | { readonly type: 'MediaBuyCreated'; readonly data: MediaBuyTerms & { readonly status: 'pending' | 'active'; readonly task_id?: string; readonly at: string } }
  | { readonly type: 'MediaBuyApproved'; readonly data: { readonly media_buy_id: string; readonly task_id?: string; readonly note?: string; readonly at: string } }
  | { readonly type: 'MediaBuyRejected'; readonly data: { readonly media_buy_id: string; readonly task_id?: string; readonly reason: string; readonly at: string } }
  | { readonly type: 'MediaBuyUpdated'; readonly data: { readonly media_buy_id: string; readonly changed: readonly string[]; readonly terms: MediaBuyTerms; readonly at: string } }
  | {
      readonly type: 'MediaBuyStatusChanged';
      readonly data: {
        readonly media_buy_id: string;
        readonly from: MediaBuyStatus;
        readonly status: MediaBuyStatus;
        readonly reason?: string;
        /** Set by the sandbox controller: the AdCP 3.0 status it forced (finer than `status`). */
        readonly forced_status?: string;
        readonly at: string;
      };
    };

/** What update_media_buy may change; omitted fields stay as they are, arrays replace. */
export interface MediaBuyChanges {
  readonly budget_change?: number;
  readonly end_time?: string;
  readonly targeting?: Record<string, unknown>;
  readonly packages?: readonly {
    readonly package_id: string;
    readonly budget?: number;
    readonly bid_price?: number;
    readonly targeting_overlay?: Record<string, unknown>;
    readonly creative_ids?: readonly string[];
    readonly paused?: boolean;
    readonly canceled?: boolean;
  }[];
  readonly push_notification_config?: Record<string, unknown>;
  readonly reporting_webhook?: Record<string, unknown>;
}

export type MediaBuyCommand =
  | { readonly type: 'CreateMediaBuy'; readonly terms: MediaBuyTerms; readonly needsApproval: boolean; readonly taskId?: string; readonly now: string }
  | { readonly type: 'ApproveMediaBuy'; readonly taskId?: string; readonly note?: string; readonly now: string }
  | { readonly type: 'RejectMediaBuy'; readonly taskId?: string; readonly reason: string; readonly now: string }
  | { readonly type: 'UpdateMediaBuy'; readonly changes: MediaBuyChanges; readonly status?: 'pause' | 'resume' | 'cancel'; readonly reason?: string; readonly now: string }
  | { readonly type: 'CompleteMediaBuy'; readonly now: string }
  /** Sandbox only (the compliance controller): the buy moves to `status`, shown to 3.0 buyers as `viewStatus`. */
  | { readonly type: 'ForceMediaBuyStatus'; readonly status: MediaBuyStatus; readonly viewStatus: string; readonly now: string }
  /** A creative (synced with assignments) now serves exactly `packageIds` among this buy's packages. */
  | { readonly type: 'AssignCreative'; readonly creativeId: string; readonly packageIds: readonly string[]; readonly now: string };

export type MediaBuyState =
  | { readonly status: 'none' }
  | {
      readonly status: MediaBuyStatus;
      readonly terms: MediaBuyTerms;
      readonly taskId?: string;
      readonly revision: number;
      /** Paused at least once: AdCP 3.0's pre-flight states (pending_creatives, pending_start) lie behind it. */
      readonly activated?: boolean;
      /** When the seller confirmed the buy: its creation when confirmed at once, else its approval. */
      readonly confirmedAt?: string;
      /** The AdCP 3.0 status the sandbox controller forced, until the next real transition. */
      readonly forcedStatus?: string;
    };

/**
 * What a buy's AdCP 3.0 lifecycle status is derived from (the wire's buyStatus3), from its state:
 * its domain status, flight start, packages' creatives, whether it ever ran, and the status the
 * sandbox controller forced (until the next real transition).
 */
export function lifecycleOf(buy: { readonly status: string; readonly terms: Pick<MediaBuyTerms, 'start_time' | 'packages'>; readonly activated?: boolean; readonly forcedStatus?: string }) {
  return { status: buy.status, start_time: buy.terms.start_time, packages: buy.terms.packages, activated: buy.activated, forced_status: buy.forcedStatus };
}

/**
 * The stream id is derived from (owner, buyer_ref), so "buyer_ref is unique per buyer" holds
 * with one append at `no_stream`: two racing creates cannot both win.
 */
export const mediaBuyStream = (mediaBuyId: string) => `media-buy-${mediaBuyId}`;

function requireStatus(state: MediaBuyState, allowed: readonly MediaBuyStatus[], action: string): asserts state is Exclude<MediaBuyState, { status: 'none' }> {
  if (state.status === 'none') throw new AppError('MEDIA_BUY_NOT_FOUND', 'no such media buy', 'media_buy_id');
  if (!allowed.includes(state.status)) {
    throw new AppError('INVALID_STATE', `cannot ${action} a media buy that is ${state.status}`, 'status', { current_status: state.status, action });
  }
}

const STATUS_ACTIONS: Record<'pause' | 'resume' | 'cancel', { from: readonly MediaBuyStatus[]; to: MediaBuyStatus }> = {
  pause: { from: ['active'], to: 'paused' },
  resume: { from: ['paused'], to: 'active' },
  cancel: { from: ['pending', 'active', 'paused'], to: 'canceled' },
};

const cents = (n: number) => Math.round(n * 100) / 100;

/** PATCH semantics: each named change is checked and applied; the names of what changed are returned. */
function applyChanges(terms: MediaBuyTerms, c: MediaBuyChanges, now: string): { terms: MediaBuyTerms; changed: string[] } {
  const changed: string[] = [];
  let packages = terms.packages.map((p) => ({ ...p }));
  let next: MediaBuyTerms = { ...terms };
  if (c.packages) {
    c.packages.forEach((u, i) => {
      const p = packages.find((x) => x.package_id === u.package_id);
      if (!p) throw new AppError('NOT_FOUND', `no package ${u.package_id} in this media buy`, `updates.packages[${i}].package_id`, { resource: 'package' });
      if (p.canceled) {
        throw new AppError('INVALID_STATE', `package ${u.package_id} is canceled; it accepts no changes`, `updates.packages[${i}].package_id`, { current_status: 'canceled', ...(u.canceled ? { action: 'cancel' } : {}) });
      }
      if (u.canceled !== undefined && u.canceled !== true) throw new AppError('VALIDATION_ERROR', 'canceled can only be true: canceling a package is irreversible', `updates.packages[${i}].canceled`);
      if (u.paused !== undefined) p.paused = u.paused;
      if (u.canceled) p.canceled = true;
      if (u.budget !== undefined) p.budget = u.budget;
      if (u.bid_price !== undefined) {
        if (p.bid_price === undefined) throw new AppError('VALIDATION_ERROR', 'bid_price applies only to auction-priced packages', `updates.packages[${i}].bid_price`);
        p.bid_price = u.bid_price;
        p.rate = u.bid_price;
      }
      if (u.targeting_overlay !== undefined) p.targeting_overlay = u.targeting_overlay;
      if (u.creative_ids !== undefined) p.creative_ids = [...u.creative_ids];
    });
    changed.push('packages');
  }
  if (c.budget_change !== undefined) {
    // A signed amount added to the total, shared across packages in proportion to their budgets.
    const total = packages.reduce((s, p) => s + p.budget, 0);
    const target = cents(total + c.budget_change);
    if (target <= 0) throw new AppError('VALIDATION_ERROR', `budget_change would leave a total of ${target}`, 'updates.budget_change');
    let assigned = 0;
    packages = packages.map((p, i) => {
      const budget = i === packages.length - 1 ? cents(target - assigned) : cents((p.budget / total) * target);
      assigned += budget;
      return { ...p, budget };
    });
    changed.push('budget');
  }
  if (c.targeting !== undefined) {
    packages = packages.map((p) => ({ ...p, targeting_overlay: c.targeting }));
    changed.push('targeting');
  }
  if (c.end_time !== undefined) {
    const end = new Date(c.end_time).toISOString();
    if (Date.parse(end) <= Date.parse(terms.start_time) || Date.parse(end) <= Date.parse(now)) {
      throw new AppError('VALIDATION_ERROR', 'end_time must be after the start time and in the future', 'updates.end_time');
    }
    next = { ...next, end_time: end };
    changed.push('end_time');
  }
  if (c.push_notification_config !== undefined) {
    next = { ...next, push_notification_config: c.push_notification_config };
    changed.push('push_notification_config');
  }
  if (c.reporting_webhook !== undefined) {
    next = { ...next, reporting_webhook: c.reporting_webhook };
    changed.push('reporting_webhook');
  }
  packages.forEach((p, i) => {
    if (p.budget <= 0) throw new AppError('VALIDATION_ERROR', 'budget must be greater than 0', `updates.packages[${i}].budget`);
  });
  return { terms: { ...next, packages, total_budget: cents(packages.reduce((s, p) => s + p.budget, 0)) }, changed };
}

function withoutForced<S extends { forcedStatus?: string }>(state: S): S {
  const { forcedStatus: _forced, ...rest } = state;
  return rest as S;
}

export const mediaBuyDecider: Decider<MediaBuyCommand, MediaBuyEvent, MediaBuyState> = {
  initialState: () => ({ status: 'none' }),

  decide(command, state) {
    switch (command.type) {
      case 'CreateMediaBuy': {
        if (state.status !== 'none') {
          throw new AppError('CONFLICT', `buyer_ref ${command.terms.buyer_ref} is already used by media buy ${state.terms.media_buy_id}`, 'buyer_ref');
        }
        if (Date.parse(command.terms.end_time) <= Date.parse(command.terms.start_time)) {
          throw new AppError('VALIDATION_ERROR', 'end_time must be after the start time', 'end_time');
        }
        const status = command.needsApproval ? 'pending' : 'active';
        return [{ type: 'MediaBuyCreated', data: { ...command.terms, status, ...(command.taskId ? { task_id: command.taskId } : {}), at: command.now } }];
      }
      case 'ApproveMediaBuy': {
        requireStatus(state, ['pending'], 'approve');
        const approved: MediaBuyEvent = { type: 'MediaBuyApproved', data: { media_buy_id: state.terms.media_buy_id, task_id: command.taskId, note: command.note, at: command.now } };
        // An "asap" buy starts when the seller confirms it, not when it was submitted: its start
        // moves to the approval, as long as that leaves a flight (approved at or after its end,
        // the start stays as recorded and the flight simply has no time left).
        const { terms } = state;
        const at = Date.parse(command.now);
        if (terms.start_asap && at > Date.parse(terms.start_time) && at < Date.parse(terms.end_time)) {
          const start_time = new Date(at).toISOString();
          return [approved, { type: 'MediaBuyUpdated', data: { media_buy_id: terms.media_buy_id, changed: ['start_time'], terms: { ...terms, start_time }, at: command.now } }];
        }
        return [approved];
      }
      case 'RejectMediaBuy':
        requireStatus(state, ['pending'], 'reject');
        return [{ type: 'MediaBuyRejected', data: { media_buy_id: state.terms.media_buy_id, task_id: command.taskId, reason: command.reason, at: command.now } }];
      case 'UpdateMediaBuy': {
        requireStatus(state, ['pending', 'active', 'paused'], command.status === 'cancel' ? 'cancel' : 'update');
        const events: MediaBuyEvent[] = [];
        const { terms, changed } = applyChanges(state.terms, command.changes, command.now);
        if (changed.length > 0) events.push({ type: 'MediaBuyUpdated', data: { media_buy_id: terms.media_buy_id, changed, terms, at: command.now } });
        if (command.status) {
          const next = STATUS_ACTIONS[command.status];
          if (!next.from.includes(state.status)) {
            throw new AppError('INVALID_STATE', `cannot ${command.status} a media buy that is ${state.status}`, 'updates.status', { current_status: state.status, action: command.status });
          }
          events.push({ type: 'MediaBuyStatusChanged', data: { media_buy_id: terms.media_buy_id, from: state.status, status: next.to, ...(command.reason ? { reason: command.reason } : {}), at: command.now } });
        }
        if (events.length === 0) throw new AppError('INVALID_REQUEST', 'updates names nothing to change', 'updates');
        return events;
      }
      case 'ForceMediaBuyStatus':
        if (state.status === 'none') throw new AppError('MEDIA_BUY_NOT_FOUND', 'no such media buy', 'media_buy_id');
        if (!state.terms.sandbox) throw new AppError('FORBIDDEN', 'only sandbox media buys can be forced to a status', 'media_buy_id');
        return [
          {
            type: 'MediaBuyStatusChanged',
            data: { media_buy_id: state.terms.media_buy_id, from: state.status, status: command.status, reason: 'forced by the compliance test controller', forced_status: command.viewStatus, at: command.now },
          },
        ];
      case 'AssignCreative': {
        if (state.status === 'none') throw new AppError('MEDIA_BUY_NOT_FOUND', 'no such media buy', 'media_buy_id');
        // A buy that has ended keeps its history as it was: assignments follow only live buys.
        if (ENDED_STATUSES.has(state.status)) return [];
        let changed = false;
        const packages = state.terms.packages.map((p) => {
          const has = p.creative_ids.includes(command.creativeId);
          const wants = command.packageIds.includes(p.package_id) && !p.canceled;
          if (has === wants) return p;
          changed = true;
          return { ...p, creative_ids: wants ? [...p.creative_ids, command.creativeId] : p.creative_ids.filter((c) => c !== command.creativeId) };
        });
        if (!changed) return [];
        return [{ type: 'MediaBuyUpdated', data: { media_buy_id: state.terms.media_buy_id, changed: ['creative_assignments'], terms: { ...state.terms, packages }, at: command.now } }];
      }
      case 'CompleteMediaBuy':
        requireStatus(state, ['active', 'paused'], 'complete');
        return [{ type: 'MediaBuyStatusChanged', data: { media_buy_id: state.terms.media_buy_id, from: state.status, status: 'completed', reason: 'flight ended', at: command.now } }];
      default:
        return assertNever(command);
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'MediaBuyCreated': {
        const { status, task_id, at, ...terms } = event.data;
        return { status, terms, taskId: task_id, revision: 1, ...(status === 'active' ? { confirmedAt: at } : {}) };
      }
      case 'MediaBuyApproved':
        return state.status === 'none' ? state : { ...withoutForced(state), status: 'active', revision: state.revision + 1, confirmedAt: event.data.at };
      case 'MediaBuyRejected':
        return state.status === 'none' ? state : { ...withoutForced(state), status: 'rejected', revision: state.revision + 1 };
      case 'MediaBuyUpdated':
        return state.status === 'none' ? state : { ...state, terms: event.data.terms, revision: state.revision + 1 };
      case 'MediaBuyStatusChanged':
        return state.status === 'none'
          ? state
          : {
              ...withoutForced(state),
              status: event.data.status,
              revision: state.revision + 1,
              ...(event.data.status === 'paused' || state.activated ? { activated: true } : {}),
              // A real transition ends whatever the sandbox controller had forced.
              ...(event.data.forced_status ? { forcedStatus: event.data.forced_status } : {}),
            };
      default:
        return assertNever(event);
    }
  },
};
