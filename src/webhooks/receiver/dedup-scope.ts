import type { JsonWebKey } from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';

/**
 * The scopes the receiver deduplicates and caps webhooks in (ReceivedEvent.dedup_scope): only
 * what verification proved, never the sender name an endpoint claims (any buyer may register an
 * endpoint naming any sender, so a name is no one's namespace).
 */

/**
 * A legacy endpoint's (HMAC or Bearer): its secret says only "whoever holds this endpoint's
 * secret", so its idempotency keys are that endpoint's alone.
 */
export const endpointScope = (endpointId: string) => `endpoint:${endpointId}`;

/**
 * An RFC 9421 webhook's: the public key its signature verified under, by its RFC 7638 thumbprint.
 * Only the holder of the private key can sign under it, whichever endpoint, sender name, JWKS or
 * publisher pin the key was found through, and whatever kid it was published as; so one seller's
 * webhooks to a buyer's several endpoints share it, and no one else's can.
 */
export async function signingKeyScope(jwk: JsonWebKey): Promise<string> {
  return `jwk:${await calculateJwkThumbprint(jwk as JWK, 'sha256')}`;
}
