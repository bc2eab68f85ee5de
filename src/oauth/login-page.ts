import { escapeHtml } from '../shared/html';

/**
 * The embedded authorization server's sign-in page: the user proves who they are with one of
 * their API keys and approves (or denies) the client. `request` is the signed, short-lived
 * authorization request, so nothing on the page can be edited into a different grant.
 */
export function loginPage(input: { clientName: string; redirectHost: string; request: string; scopes: readonly string[]; error?: string }): string {
  const client = escapeHtml(input.clientName);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · adcp-gateway</title>
<style>body{font:16px system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}
label,input,button{display:block;width:100%;box-sizing:border-box}input{padding:.5rem;margin:.25rem 0 1rem;font:inherit}
button{padding:.6rem;margin:.5rem 0;font:inherit;cursor:pointer}.error{color:#a00}.muted{color:#666;font-size:.9rem}</style></head>
<body><h1>Sign in to adcp-gateway</h1>
<p><strong>${client}</strong> asks to act on your behalf${input.scopes.length ? ` (${escapeHtml(input.scopes.join(' '))})` : ''}.
After you approve, you are sent back to <strong>${escapeHtml(input.redirectHost)}</strong>.</p>
${input.error ? `<p class="error" role="alert">${escapeHtml(input.error)}</p>` : ''}
<form method="post" action="/oauth/login">
<input type="hidden" name="request" value="${escapeHtml(input.request)}">
<label for="api_key">Your API key</label>
<input id="api_key" name="api_key" type="password" autocomplete="off" placeholder="sk_…">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>
<p class="muted">The key stays here: the application receives a short-lived token that acts as you, with your key's role.</p>
</body></html>`;
}

/** A dead end the user can read (an expired or tampered sign-in form); no redirect is safe then. */
export function errorPage(message: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign-in failed · adcp-gateway</title></head>
<body style="font:16px system-ui,sans-serif;max-width:32rem;margin:4rem auto"><h1>Sign-in failed</h1><p>${escapeHtml(message)}</p>
<p>Start again from your application.</p></body></html>`;
}

/** Headers for every page the authorization server renders: never cached, never framed. */
export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
} as const;
