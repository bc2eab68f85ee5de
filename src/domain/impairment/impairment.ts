import { assertNever, type Decider } from '../decider';

/** AdCP core/impairment: an upstream resource of a buy went offline for some of its packages. */
export interface Impairment {
  readonly impairment_id: string;
  readonly media_buy_id: string;
  readonly owner: string;
  readonly resource_type: 'property';
  readonly resource_id: string;
  readonly package_ids: readonly string[];
  readonly transition: { readonly from: string; readonly to: 'depublished' | 'withdrawn' };
  readonly reason_code: 'property_depublished' | 'seller_removed';
  readonly reason: string;
  readonly observed_at: string;
  readonly remediation?: string;
}

export type ImpairmentEvent =
  | { readonly type: 'ImpairmentOpened'; readonly data: Impairment }
  | { readonly type: 'ImpairmentResolved'; readonly data: { readonly impairment_id: string; readonly media_buy_id: string; readonly resolved_at: string } };

export type ImpairmentCommand =
  | { readonly type: 'OpenImpairment'; readonly impairment: Impairment }
  | { readonly type: 'ResolveImpairment'; readonly now: string };

export type ImpairmentState = { readonly open?: Impairment };

/** One stream per (buy, resource): its impairments open and close in turn, each with a new id. */
export const impairmentStream = (mediaBuyId: string, resourceType: string, resourceId: string) => `impairment-${mediaBuyId}.${resourceType}.${resourceId}`;

/**
 * State-shaped: opening an open impairment or resolving a closed one decides nothing, so a
 * redelivered catalog change (at-least-once) never re-fires. A resource that goes offline again
 * after a resolution opens a new impairment with a new id, as AdCP requires.
 */
export const impairmentDecider: Decider<ImpairmentCommand, ImpairmentEvent, ImpairmentState> = {
  initialState: () => ({}),
  decide(command, state) {
    switch (command.type) {
      case 'OpenImpairment':
        return state.open ? [] : [{ type: 'ImpairmentOpened', data: command.impairment }];
      case 'ResolveImpairment':
        return state.open
          ? [{ type: 'ImpairmentResolved', data: { impairment_id: state.open.impairment_id, media_buy_id: state.open.media_buy_id, resolved_at: command.now } }]
          : [];
      default:
        return assertNever(command);
    }
  },
  evolve(state, event) {
    switch (event.type) {
      case 'ImpairmentOpened':
        return { open: event.data };
      case 'ImpairmentResolved':
        return {};
      default:
        return assertNever(event);
    }
  },
};
