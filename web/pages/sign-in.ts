import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { finishOAuthSignIn, gql, GraphQLFailure, startOAuthSignIn, type Session } from '../api.js';

/**
 * Sign in through the gateway's sign-in page (OAuth, the key stays with the gateway), or by
 * pasting an API key (kept for this tab only).
 */
export function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [oauthError, setOauthError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  // A return from the gateway's sign-in page carries a code to exchange.
  useEffect(() => {
    finishOAuthSignIn().then(
      (session) => session && onSignedIn(session),
      (err: unknown) => setOauthError(err instanceof Error ? err.message : String(err)),
    );
  }, []);
  const withGateway = () => {
    setBusy(true);
    startOAuthSignIn().catch((err: unknown) => {
      setBusy(false);
      setOauthError(err instanceof Error ? err.message : String(err));
    });
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const { viewer } = await gql<{ viewer: { org: string; role: string } | null }>('{ viewer { org role } }', {}, key.trim());
      if (!viewer) throw new GraphQLFailure('that key is not signed in', 'UNAUTHENTICATED', 'key');
      onSignedIn({ credential: key.trim(), org: viewer.org, role: viewer.role });
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="signin">
    <h1>adcp-gateway console</h1>
    <p><button type="button" onClick=${withGateway} disabled=${busy}>Sign in with the gateway</button></p>
    ${oauthError ? html`<p class="error" role="alert">${oauthError}</p>` : null}
    <p class="muted">Or paste an API key:</p>
    <form onSubmit=${submit}>
      <label for="api-key">API key</label>
      <input id="api-key" name="api-key" type="password" autocomplete="off" required value=${key} onInput=${(e: Event) => setKey((e.target as HTMLInputElement).value)} aria-describedby=${error ? 'signin-error' : undefined} aria-invalid=${error ? 'true' : undefined} />
      ${error ? html`<p id="signin-error" class="error" role="alert">${error}</p>` : null}
      <button type="submit" class="secondary" disabled=${busy}>${busy ? 'Signing in…' : 'Sign in with the key'}</button>
    </form>
    <p class="muted">A key from <code>adcp-gateway keys create --org … --role buyer|seller</code>. It is kept for this tab only.</p>
  </main>`;
}
