import { AppError } from '../../shared/errors';
import { assertNever, type Decider } from '../decider';

export interface CreativeContent {
  readonly creative_id: string;
  readonly owner: string;
  readonly name: string;
  readonly format_id: { readonly agent_url: string; readonly id: string };
  readonly format_type: string;
  readonly assets: Record<string, unknown>;
  /** Package ids this creative is assigned to (replacement semantics on each sync that names them). */
  readonly assigned_to: readonly string[];
  /** When each current assignment was first made (carried over while it stays). */
  readonly assigned_at?: Readonly<Record<string, string>>;
  /** Synced under a sandbox account: the compliance controller may force its review status. */
  readonly sandbox?: boolean;
}

/** AdCP creative statuses (3.0 `creative-status`). Syncs approve at once; the rest come from review. */
export type CreativeStatus = 'processing' | 'pending_review' | 'approved' | 'suspended' | 'rejected' | 'archived';
export const CREATIVE_STATUSES: readonly CreativeStatus[] = ['processing', 'pending_review', 'approved', 'suspended', 'rejected', 'archived'];

/** The review lifecycle's edges (AdCP's creative state machine). */
const CREATIVE_NEXT: Record<CreativeStatus, readonly CreativeStatus[]> = {
  processing: ['pending_review', 'rejected'],
  pending_review: ['approved', 'rejected'],
  approved: ['archived', 'rejected', 'suspended'],
  suspended: ['approved', 'rejected', 'archived'],
  archived: ['approved'],
  rejected: ['processing', 'pending_review'],
};

export type CreativeEvent =
  | { readonly type: 'CreativeSynced'; readonly data: CreativeContent & { readonly hash: string; readonly status: 'approved'; readonly created: boolean; readonly at: string } }
  | { readonly type: 'CreativeArchived'; readonly data: { readonly creative_id: string; readonly owner: string; readonly at: string } }
  | {
      readonly type: 'CreativeStatusChanged';
      readonly data: { readonly creative_id: string; readonly owner: string; readonly from: CreativeStatus; readonly status: CreativeStatus; readonly reason?: string; readonly at: string };
    };

export type CreativeCommand =
  | { readonly type: 'SyncCreative'; readonly content: CreativeContent; readonly hash: string; readonly now: string }
  | { readonly type: 'ArchiveCreative'; readonly now: string }
  /** Sandbox only (the compliance controller): the review outcome a real seller's reviewers would reach. */
  | { readonly type: 'ForceCreativeStatus'; readonly status: CreativeStatus; readonly reason?: string; readonly now: string };

export type CreativeState =
  | { readonly status: 'none' }
  | { readonly status: CreativeStatus; readonly hash: string; readonly content: CreativeContent };

/** Buyer-chosen ids are scoped to the buyer. */
export const creativeStream = (owner: string, creativeId: string) => `creative-${Buffer.from(`${owner}\u0000${creativeId}`).toString('base64url')}`;

/** The outcome of one sync for one creative, as sync_creatives reports it. */
export function syncAction(state: CreativeState, hash: string): 'created' | 'updated' | 'unchanged' {
  if (state.status === 'none') return 'created';
  return state.status === 'approved' && state.hash === hash ? 'unchanged' : 'updated';
}

export const creativeDecider: Decider<CreativeCommand, CreativeEvent, CreativeState> = {
  initialState: () => ({ status: 'none' }),
  decide(command, state) {
    switch (command.type) {
      case 'SyncCreative':
        if (syncAction(state, command.hash) === 'unchanged') return [];
        return [{ type: 'CreativeSynced', data: { ...command.content, hash: command.hash, status: 'approved', created: state.status === 'none', at: command.now } }];
      case 'ArchiveCreative':
        if (state.status === 'none') throw new AppError('CREATIVE_NOT_FOUND', 'no such creative', 'creative_id');
        if (state.status === 'archived') return [];
        return [{ type: 'CreativeArchived', data: { creative_id: state.content.creative_id, owner: state.content.owner, at: command.now } }];
      case 'ForceCreativeStatus':
        if (state.status === 'none') throw new AppError('CREATIVE_NOT_FOUND', 'no such creative', 'creative_id');
        if (!state.content.sandbox) throw new AppError('FORBIDDEN', 'only sandbox creatives can be forced to a status', 'creative_id');
        if (state.status === command.status) return [];
        if (!CREATIVE_NEXT[state.status].includes(command.status)) {
          throw new AppError('INVALID_STATE', `a creative that is ${state.status} cannot become ${command.status}`, 'status', { current_status: state.status });
        }
        return [
          {
            type: 'CreativeStatusChanged',
            data: { creative_id: state.content.creative_id, owner: state.content.owner, from: state.status, status: command.status, ...(command.reason ? { reason: command.reason } : {}), at: command.now },
          },
        ];
      default:
        return assertNever(command);
    }
  },
  evolve(state, event) {
    switch (event.type) {
      case 'CreativeSynced': {
        const { hash, status, created: _c, at: _at, ...content } = event.data;
        return { status, hash, content };
      }
      case 'CreativeArchived':
        return state.status === 'none' ? state : { ...state, status: 'archived' };
      case 'CreativeStatusChanged':
        return state.status === 'none' ? state : { ...state, status: event.data.status };
      default:
        return assertNever(event);
    }
  },
};
