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

// --- Sign-in through the gateway's own authorization server (OAuth 2.1 code + PKCE) ----------
//
// The console is a public client: it registers itself once per browser (RFC 7591), sends the
// person to /authorize, where they approve with one of their API keys on the gateway's own page,
// and exchanges the code it gets back, with the PKCE verifier only this tab holds, for a
// short-lived token that acts as that key. The key itself never reaches the console.

const CLIENT_KEY = 'adcp-console-client';
const PENDING_KEY = 'adcp-console-oauth';
const redirectUri = () => `${location.origin}/app/`;

const base64url = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

async function clientId(): Promise<string> {
  const known = localStorage.getItem(CLIENT_KEY);
  if (known) return known;
  const res = await fetch('/register', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'adcp-gateway console', redirect_uris: [redirectUri()], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] }),
  });
  const body = (await res.json()) as { client_id?: string; error_description?: string };
  if (!res.ok || !body.client_id) throw new GraphQLFailure(`the gateway would not register the console: ${body.error_description ?? res.status}`, 'OAUTH', undefined);
  localStorage.setItem(CLIENT_KEY, body.client_id);
  return body.client_id;
}

/** Sends the browser to the gateway's sign-in page. */
export async function startOAuthSignIn(): Promise<void> {
  const client = await clientId();
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  const state = base64url(crypto.getRandomValues(new Uint8Array(16)));
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ verifier, state, client }));
  const url = new URL('/authorize', location.origin);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id: client, redirect_uri: redirectUri(), code_challenge: challenge, code_challenge_method: 'S256', state, scope: 'openid' })) url.searchParams.set(k, v);
  location.assign(url.href);
}

/**
 * Back from the sign-in page: the code exchanged for a token, and the session it makes; null when
 * this page load is not a return from it. Throws with the reason when the sign-in failed.
 */
export async function finishOAuthSignIn(): Promise<Session | null> {
  const params = new URLSearchParams(location.search);
  const code = params.get('code');
  const error = params.get('error');
  if (!code && !error) return null;
  history.replaceState(null, '', `${location.pathname}${location.hash}`); // the code is single-use: off the address bar
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) ?? 'null') as { verifier: string; state: string; client: string } | null;
  sessionStorage.removeItem(PENDING_KEY);
  if (error) throw new GraphQLFailure(params.get('error_description') ?? `sign-in was not completed (${error})`, 'OAUTH', undefined);
  if (!pending || params.get('state') !== pending.state) throw new GraphQLFailure('this sign-in was not started here; sign in again', 'OAUTH', undefined);
  const res = await fetch('/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code: code!, code_verifier: pending.verifier, client_id: pending.client, redirect_uri: redirectUri() }).toString(),
  });
  const tokens = (await res.json()) as { access_token?: string; error_description?: string };
  if (!res.ok || !tokens.access_token) throw new GraphQLFailure(`the gateway refused the sign-in: ${tokens.error_description ?? res.status}`, 'OAUTH', undefined);
  const { viewer } = await gql<{ viewer: { org: string; role: string } | null }>('{ viewer { org role } }', {}, tokens.access_token);
  if (!viewer) throw new GraphQLFailure('the token from the sign-in does not sign in', 'UNAUTHENTICATED', undefined);
  return { credential: tokens.access_token, org: viewer.org, role: viewer.role };
}
