import { createHash } from 'node:crypto';
import { assertNever, type Decider } from '../decider';
import { AppError } from '../../shared/errors';

/**
 * Proposals: the seller's curated media plans (the catalog's `proposals[]`), offered beside the
 * products of a brief. Each buyer works on its own copy of a plan, kept in a stream per (buyer,
 * proposal): refinements re-split the budget, and finalizing commits the plan's pricing and holds
 * its inventory until `expires_at`. A plan nobody refined has no stream: it is the catalog's.
 */
export interface Allocation {
  readonly product_id: string;
  readonly pricing_option_id: string;
  /** Percent of the buy's total budget; a plan's allocations sum to 100. */
  readonly allocation_percentage: number;
  readonly rationale?: string;
}

/** How long a finalized proposal holds its inventory and firm pricing. */
export const PROPOSAL_HOLD_MS = 24 * 3600_000;

export const proposalStream = (owner: string, proposalId: string) =>
  `proposal-${createHash('sha256').update(owner).digest('base64url').slice(0, 22)}-${proposalId}`;

export type ProposalEvent =
  | { readonly type: 'ProposalRefined'; readonly data: { readonly proposal_id: string; readonly owner: string; readonly allocations: readonly Allocation[]; readonly asks: readonly string[]; readonly at: string } }
  | { readonly type: 'ProposalFinalized'; readonly data: { readonly proposal_id: string; readonly owner: string; readonly allocations: readonly Allocation[]; readonly expires_at: string; readonly at: string } };

export type ProposalCommand =
  | { readonly type: 'RefineProposal'; readonly proposalId: string; readonly owner: string; readonly allocations: readonly Allocation[]; readonly asks: readonly string[]; readonly now: string }
  | { readonly type: 'FinalizeProposal'; readonly proposalId: string; readonly owner: string; readonly allocations: readonly Allocation[]; readonly now: string };

export interface ProposalState {
  /** The buyer's allocations; undefined while the plan is the catalog's as published. */
  readonly allocations?: readonly Allocation[];
  /** Set while the plan is committed (finalized and not changed since). */
  readonly expiresAt?: string;
}

/** A committed proposal whose hold has not lapsed at `now`. */
export function isHeld(state: ProposalState, now: string): boolean {
  return state.expiresAt !== undefined && Date.parse(state.expiresAt) > Date.parse(now);
}

/** Percentages must add up to 100 (to the cent): what a buy derived from the plan spends. */
export function assertWhole(allocations: readonly Allocation[]): void {
  const sum = allocations.reduce((s, a) => s + a.allocation_percentage, 0);
  if (allocations.length === 0 || Math.abs(sum - 100) > 0.01) throw new AppError('VALIDATION_ERROR', `a proposal's allocations must sum to 100 (they sum to ${sum})`, 'proposal_id');
}

export const proposalDecider: Decider<ProposalCommand, ProposalEvent, ProposalState> = {
  initialState: () => ({}),
  decide(command, state) {
    switch (command.type) {
      case 'RefineProposal':
        assertWhole(command.allocations);
        return [{ type: 'ProposalRefined', data: { proposal_id: command.proposalId, owner: command.owner, allocations: command.allocations, asks: command.asks, at: command.now } }];
      case 'FinalizeProposal': {
        // Finalizing the plan already held is a no-op: the hold (and its expiry) stands.
        if (isHeld(state, command.now) && JSON.stringify(state.allocations) === JSON.stringify(command.allocations)) return [];
        assertWhole(command.allocations);
        const expiresAt = new Date(Date.parse(command.now) + PROPOSAL_HOLD_MS).toISOString();
        return [{ type: 'ProposalFinalized', data: { proposal_id: command.proposalId, owner: command.owner, allocations: command.allocations, expires_at: expiresAt, at: command.now } }];
      }
      default:
        return assertNever(command);
    }
  },
  evolve(_state, event) {
    switch (event.type) {
      // A changed plan is a new offer: whatever was committed before no longer holds.
      case 'ProposalRefined':
        return { allocations: event.data.allocations };
      case 'ProposalFinalized':
        return { allocations: event.data.allocations, expiresAt: event.data.expires_at };
      default:
        return assertNever(event);
    }
  },
};
