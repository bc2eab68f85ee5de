import { createHash, randomBytes } from 'node:crypto';

/** A loopback redirect URI no one listens on: the tests read the code from the 302's Location. */
export const REDIRECT = 'http://127.0.0.1:1/callback';

/** A PKCE verifier and its S256 challenge. */
export const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

/** A form POST (the token, revoke and sign-in endpoints), redirects left to the test. */
export const form = (fields: Record<string, string>) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
  redirect: 'manual' as const,
});
