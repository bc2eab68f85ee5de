/** AdCP `reporting_frequency` values. */
export type ReportingFrequency = 'hourly' | 'daily' | 'monthly';

/** The next UTC boundary of the frequency strictly after `t` (ms). */
export function nextBoundary(t: number, f: ReportingFrequency): number {
  const d = new Date(t);
  switch (f) {
    case 'hourly':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours() + 1);
    case 'daily':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
    case 'monthly':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  }
}

export interface Period {
  /** 1-based: the report's sequence_number. */
  sequence: number;
  start: string;
  end: string;
}

/**
 * The reporting periods of a flight whose end has passed by `through`: the first runs from the
 * flight start to the next UTC boundary, each next one boundary to boundary, and none starts at
 * or after the flight's end. Period k is always the same window, so "report k" names one report.
 */
export function elapsedPeriods(flightStart: string, flightEnd: string, f: ReportingFrequency, through: string, limit = 10_000): Period[] {
  const out: Period[] = [];
  const stop = Math.min(Date.parse(through), Date.parse(flightEnd));
  let start = Date.parse(flightStart);
  while (out.length < limit) {
    const end = nextBoundary(start, f);
    if (end > stop) break;
    out.push({ sequence: out.length + 1, start: new Date(start).toISOString(), end: new Date(end).toISOString() });
    start = end;
  }
  return out;
}
