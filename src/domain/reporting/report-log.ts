import { assertNever, type Decider } from '../decider';

export type ReportKind = 'scheduled' | 'final' | 'adjusted' | 'delayed';

export type ClaimedReport = {
  readonly media_buy_id: string;
  readonly key: string;
  readonly notification_type: ReportKind;
  readonly sequence_number: number;
  readonly period: { readonly start: string; readonly end: string };
  readonly expected_availability?: string;
  readonly at: string;
};

/**
 * One buy's delivery reports in the order they were issued. Each report claims the next
 * sequence_number here before its webhook is scheduled, so numbers are gapless and strictly
 * increasing per buy whatever mix of scheduled, adjusted, delayed and final reports goes out, and
 * a report is named by a key (`3` for the third scheduled period, `final`, `adjusted.<event id>`,
 * `delayed.<event id>`) so claiming it again — a redelivered event, a second instance — returns
 * the number it already has. Once its webhook is appended the report is marked scheduled, so a
 * claim a crash left without its webhook can be found and sent.
 */
export type ReportLogEvent =
  | { readonly type: 'DeliveryReportSequenced'; readonly data: ClaimedReport }
  | { readonly type: 'DeliveryReportScheduled'; readonly data: { readonly media_buy_id: string; readonly key: string; readonly at: string } };

export type ReportLogCommand =
  | {
      readonly type: 'ClaimReport';
      readonly media_buy_id: string;
      readonly key: string;
      readonly notification_type: ReportKind;
      readonly period: { readonly start: string; readonly end: string };
      readonly expected_availability?: string;
      readonly now: string;
    }
  | { readonly type: 'MarkScheduled'; readonly media_buy_id: string; readonly key: string; readonly now: string };

export interface ReportLogState {
  readonly reports: ReadonlyMap<string, ClaimedReport>;
  /** Keys whose webhook has been appended. */
  readonly scheduled: ReadonlySet<string>;
  readonly finalIssued: boolean;
}

export const reportLogStream = (mediaBuyId: string) => `delivery-reports-${mediaBuyId}`;

/** Claims whose webhook is not known to be appended yet, oldest first. */
export const unscheduled = (state: ReportLogState) =>
  [...state.reports.values()].filter((r) => !state.scheduled.has(r.key)).sort((a, b) => a.sequence_number - b.sequence_number);

export const reportLogDecider: Decider<ReportLogCommand, ReportLogEvent, ReportLogState> = {
  initialState: () => ({ reports: new Map(), scheduled: new Set(), finalIssued: false }),

  decide(command, state) {
    switch (command.type) {
      case 'ClaimReport': {
        // Already claimed: nothing new. After the final report: nothing at all.
        if (state.reports.has(command.key) || state.finalIssued) return [];
        const { media_buy_id, key, notification_type, period, expected_availability, now } = command;
        const data = { media_buy_id, key, notification_type, sequence_number: state.reports.size + 1, period, ...(expected_availability ? { expected_availability } : {}), at: now };
        return [{ type: 'DeliveryReportSequenced', data }];
      }
      case 'MarkScheduled':
        if (!state.reports.has(command.key) || state.scheduled.has(command.key)) return [];
        return [{ type: 'DeliveryReportScheduled', data: { media_buy_id: command.media_buy_id, key: command.key, at: command.now } }];
      default:
        return assertNever(command);
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'DeliveryReportSequenced': {
        const reports = new Map(state.reports);
        reports.set(event.data.key, event.data);
        return { ...state, reports, finalIssued: state.finalIssued || event.data.notification_type === 'final' };
      }
      case 'DeliveryReportScheduled':
        return { ...state, scheduled: new Set(state.scheduled).add(event.data.key) };
      default:
        return assertNever(event);
    }
  },
};
