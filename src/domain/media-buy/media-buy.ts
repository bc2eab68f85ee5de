import { AppError } from '../../shared/errors';
import { assertNever, type Decider } from '../decider';

/** Lifecycle: pending → active ⇄ paused → completed | canceled; pending → rejected. */
export type MediaBuyStatus = 'pending' | 'active' | 'paused' | 'completed' | 'canceled' | 'rejected';

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
  readonly creative_ids: readonly string[];
}

export interface MediaBuyTerms {
  readonly media_buy_id: string;
  readonly owner: string;
  readonly buyer_ref: string;
  readonly brand_manifest: Record<string, unknown>;
  readonly packages: readonly PackageTerms[];
  readonly start_time: string;
  readonly end_time: string;
  readonly currency: string;
  readonly total_budget: number;
  readonly push_notification_config?: Record<string, unknown>;
  readonly reporting_webhook?: Record<string, unknown>;
}

export type MediaBuyEvent =
  | { readonly type: 'MediaBuyCreated'; readonly data: MediaBuyTerms & { readonly status: 'pending' | 'active'; readonly task_id?: string; readonly at: string } }
  | { readonly type: 'MediaBuyApproved'; readonly data: { readonly media_buy_id: string; readonly task_id?: string; readonly note?: string; readonly at: string } }
  | { readonly type: 'MediaBuyRejected'; readonly data: { readonly media_buy_id: string; readonly task_id?: string; readonly reason: string; readonly at: string } };

export type MediaBuyCommand =
  | { readonly type: 'CreateMediaBuy'; readonly terms: MediaBuyTerms; readonly needsApproval: boolean; readonly taskId?: string; readonly now: string }
  | { readonly type: 'ApproveMediaBuy'; readonly taskId?: string; readonly note?: string; readonly now: string }
  | { readonly type: 'RejectMediaBuy'; readonly taskId?: string; readonly reason: string; readonly now: string };

export type MediaBuyState =
  | { readonly status: 'none' }
  | { readonly status: MediaBuyStatus; readonly terms: MediaBuyTerms; readonly taskId?: string };

/**
 * The stream id is derived from (owner, buyer_ref), so "buyer_ref is unique per buyer" holds
 * with one append at `no_stream`: two racing creates cannot both win.
 */
export const mediaBuyStream = (mediaBuyId: string) => `media-buy-${mediaBuyId}`;

function requireStatus(state: MediaBuyState, allowed: readonly MediaBuyStatus[], action: string): asserts state is Exclude<MediaBuyState, { status: 'none' }> {
  if (state.status === 'none') throw new AppError('MEDIA_BUY_NOT_FOUND', 'no such media buy', 'media_buy_id');
  if (!allowed.includes(state.status)) {
    throw new AppError('INVALID_STATE', `cannot ${action} a media buy that is ${state.status}`, 'status', { current_status: state.status });
  }
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
      case 'ApproveMediaBuy':
        requireStatus(state, ['pending'], 'approve');
        return [{ type: 'MediaBuyApproved', data: { media_buy_id: state.terms.media_buy_id, task_id: command.taskId, note: command.note, at: command.now } }];
      case 'RejectMediaBuy':
        requireStatus(state, ['pending'], 'reject');
        return [{ type: 'MediaBuyRejected', data: { media_buy_id: state.terms.media_buy_id, task_id: command.taskId, reason: command.reason, at: command.now } }];
      default:
        return assertNever(command);
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'MediaBuyCreated': {
        const { status, task_id, at: _at, ...terms } = event.data;
        return { status, terms, taskId: task_id };
      }
      case 'MediaBuyApproved':
        return state.status === 'none' ? state : { ...state, status: 'active' };
      case 'MediaBuyRejected':
        return state.status === 'none' ? state : { ...state, status: 'rejected' };
      default:
        return assertNever(event);
    }
  },
};
