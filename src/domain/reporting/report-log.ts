import { assertNever, type Decider } from '../decider';

export type ReportKind = 'scheduled' | 'final' | 'adjusted' | 'delayed';

/**
 * One buy's delivery reports in the order they were issued. Each report claims the next
 * sequence_number here before its webhook is scheduled, so numbers are gapless and strictly
 * increasing per buy whatever mix of scheduled, adjusted, delayed and final reports goes out, and
 * a report is named by a key (`3` for the third scheduled period, `final`, `adjusted.<event id>`,
 * `delayed.<event id>`) so claiming it again
 * — a redelivered event, a second instance — returns the number it already has.
 */
export type ReportLogEvent = {
  readonly type: 'DeliveryReportSequenced';
  readonly data: {
    readonly media_buy_id: string;
    readonly key: string;
    readonly notification_type: ReportKind;
    readonly sequence_number: number;
    readonly period: { readonly start: string; readonly end: string };
    readonly expected_availability?: string;
    readonly at: string;
  };
};

export type ReportLogCommand = {
  readonly type: 'ClaimReport';
  readonly media_buy_id: string;
  readonly key: string;
  readonly notification_type: ReportKind;
  readonly period: { readonly start: string; readonly end: string };
  readonly expected_availability?: string;
  readonly now: string;
};

export interface ReportLogState {
  readonly reports: ReadonlyMap<string, ReportLogEvent['data']>;
  readonly finalIssued: boolean;
}

export const reportLogStream = (mediaBuyId: string) => `delivery-reports-${mediaBuyId}`;

/** The report claimed last (the only one whose webhook a crash can have left unwritten). */
export const lastClaimed = (state: ReportLogState) => [...state.reports.values()].reduce<ReportLogEvent['data'] | undefined>((a, r) => (!a || r.sequence_number > a.sequence_number ? r : a), undefined);

export const reportLogDecider: Decider<ReportLogCommand, ReportLogEvent, ReportLogState> = {
  initialState: () => ({ reports: new Map(), finalIssued: false }),

  decide(command, state) {
    switch (command.type) {
      case 'ClaimReport': {
        // Already claimed: nothing new. After the final report: nothing at all.
        if (state.reports.has(command.key) || state.finalIssued) return [];
        const { media_buy_id, key, notification_type, period, expected_availability, now } = command;
        const data = { media_buy_id, key, notification_type, sequence_number: state.reports.size + 1, period, ...(expected_availability ? { expected_availability } : {}), at: now };
        return [{ type: 'DeliveryReportSequenced', data }];
      }
      default:
        return assertNever(command.type);
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'DeliveryReportSequenced': {
        const reports = new Map(state.reports);
        reports.set(event.data.key, event.data);
        return { reports, finalIssued: state.finalIssued || event.data.notification_type === 'final' };
      }
      default:
        return assertNever(event.type);
    }
  },
};
