import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { gql, subscribe } from './api.js';

/** What a page shows while it loads, when it failed, and when there is nothing. */
export function Loading() {
  return html`<p class="muted" role="status">Loading…</p>`;
}

export function Failure({ error }: { error: string }) {
  return html`<p class="error" role="alert">${error}</p>`;
}

/** Loads a query, and loads it again whenever one of the `live` subscriptions says something changed. */
export function useQuery<T>(query: string, variables: Record<string, unknown>, ...live: { subscription: string; variables: Record<string, unknown> }[]): { data?: T; error?: string; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: string }>({});
  const [version, setVersion] = useState(0);
  const key = JSON.stringify(variables);
  useEffect(() => {
    let current = true;
    gql<T>(query, variables).then(
      (data) => current && setState({ data }),
      (err: unknown) => current && setState((s) => ({ ...s, error: err instanceof Error ? err.message : String(err) })),
    );
    return () => {
      current = false;
    };
  }, [query, key, version]);
  useEffect(() => {
    const stops = live.map((l) => subscribe(l.subscription, l.variables, () => setVersion((v) => v + 1), (message) => setState((s) => ({ ...s, error: message }))));
    return () => stops.forEach((stop) => stop());
  }, [JSON.stringify(live)]);
  return { ...state, reload: () => setVersion((v) => v + 1) };
}

export const money = (amount: number, currency: string) => new Intl.NumberFormat('en', { style: 'currency', currency }).format(amount);
export const day = (iso: string) => iso.slice(0, 10);

/** A media buy as the lists show it. */
export interface BuyRow {
  id: string;
  buyerRef: string;
  status: string;
  currency: string;
  totalBudget: number;
  startTime: string;
  endTime: string;
}

