import { createClient, type Client } from 'graphql-ws';

/** Who is signed in: the credential sent as `Authorization: Bearer …`, and what the gateway says of it. */
export interface Session {
  credential: string;
  org: string;
  role: 'buyer' | 'seller' | 'admin' | string;
}

const STORAGE_KEY = 'adcp-console-session';

/** The session of this browser tab (sessionStorage: it ends with the tab, and is not shared with other tabs). */
export function savedSession(): Session | null {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    return raw ? (JSON.parse(raw) as Session) : null;
  } catch {
    return null;
  }
}

export function saveSession(session: Session | null): void {
  if (session) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session));
  else sessionStorage.removeItem(STORAGE_KEY);
  closeLive();
}

/** A GraphQL error as the gateway reports it: its message, code and the input field it is about. */
export class GraphQLFailure extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly field: string | undefined,
  ) {
    super(message);
  }
}

/** One operation over POST /graphql; resolves to its data or rejects with the first error. */
export async function gql<T>(query: string, variables: Record<string, unknown> = {}, credential = savedSession()?.credential): Promise<T> {
  const res = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(credential ? { authorization: `Bearer ${credential}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  let body: { data?: T; errors?: { message: string; extensions?: { code?: string; field?: string } }[] };
  try {
    body = (await res.json()) as typeof body;
  } catch {
    throw new GraphQLFailure(`the gateway answered ${res.status} without JSON`, undefined, undefined);
  }
  const error = body.errors?.[0];
  if (error) throw new GraphQLFailure(error.message, error.extensions?.code, error.extensions?.field);
  if (!body.data) throw new GraphQLFailure(`the gateway answered ${res.status} without data`, undefined, undefined);
  return body.data;
}

let live: Client | undefined;

function liveClient(): Client {
  live ??= createClient({
    url: `${location.origin.replace(/^http/, 'ws')}/graphql`,
    lazy: true,
    connectionParams: () => {
      const credential = savedSession()?.credential;
      return credential ? { authorization: `Bearer ${credential}` } : {};
    },
  });
  return live;
}

function closeLive(): void {
  void live?.dispose();
  live = undefined;
}

/** Follows a subscription; returns how to stop. Each payload is handed to `next`. */
export function subscribe<T>(query: string, variables: Record<string, unknown>, next: (payload: T) => void, onError: (message: string) => void): () => void {
  return liveClient().subscribe<Record<string, T>>(
    { query, variables },
    {
      next: (r) => {
        if (r.errors?.length) onError(r.errors[0]!.message);
        const data = r.data ? Object.values(r.data)[0] : undefined;
        if (data) next(data);
      },
      error: (err) => onError(err instanceof Error ? err.message : 'the live connection closed'),
      complete: () => undefined,
    },
  );
}
