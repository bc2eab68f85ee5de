import { SignatureVerificationError, spendNonce, verifySignature, type SignatureProfile, type SignedRequest, type VerifiedSignature, type VerifierOptions } from './signature-verifier';
import { WEBHOOK_COMPONENTS, WEBHOOK_SIGNING_TAG } from './webhook-signer';

export { lowerHeaders, MemoryReplayStore, type ReplayStore, type VerifierOptions } from './signature-verifier';

/** The AdCP webhook verification failure codes (security.mdx "webhook_*" taxonomy). */
export type WebhookErrorCode =
  | 'webhook_signature_header_malformed'
  | 'webhook_signature_params_incomplete'
  | 'webhook_signature_tag_invalid'
  | 'webhook_signature_alg_not_allowed'
  | 'webhook_signature_window_invalid'
  | 'webhook_signature_components_incomplete'
  | 'webhook_signature_key_unknown'
  | 'webhook_signature_key_purpose_invalid'
  | 'webhook_signature_key_revoked'
  | 'webhook_signature_revocation_stale'
  | 'webhook_signature_rate_abuse'
  | 'webhook_signature_invalid'
  | 'webhook_signature_digest_mismatch'
  | 'webhook_signature_replayed'
  | 'webhook_target_uri_malformed'
  | 'webhook_body_malformed'
  | 'webhook_mode_mismatch';

/** A failed webhook verification; its `code` is one of WebhookErrorCode. */
export const WebhookVerificationError = SignatureVerificationError as new (code: WebhookErrorCode, step: string, message?: string) => SignatureVerificationError<WebhookErrorCode>;
export type WebhookVerificationError = SignatureVerificationError<WebhookErrorCode>;

export type WebhookRequest = SignedRequest;
export type VerifiedWebhook = VerifiedSignature;

/**
 * The webhook-signing profile: the five components the profile fixes (the body always bound by
 * its digest), keys published for request or webhook signing (senders predating
 * `webhook-signing` publish `request-signing`), AdCP's recommended cap of 100,000 live nonces per
 * keyid, and bodies whose JSON has duplicate keys refused.
 */
export const WEBHOOK_PROFILE: SignatureProfile = {
  prefix: 'webhook',
  tag: WEBHOOK_SIGNING_TAG,
  mandatory: WEBHOOK_COMPONENTS,
  contentTypeWithBody: false,
  contentDigest: 'required',
  purposes: new Set(['request-signing', 'webhook-signing']),
  asciiHostOnly: false,
  strictJsonBody: true,
  defaultPerKeyidCap: 100_000,
};

/** The AdCP webhook verifier checklist (see verifySignature), throwing WebhookVerificationError. */
export function verifyWebhook(req: WebhookRequest, options: VerifierOptions): Promise<VerifiedWebhook> {
  return verifySignature(req, WEBHOOK_PROFILE, options);
}

/** Spends the nonce of a webhook verified with `deferNonce`, once the receiver accepts it; throws webhook_signature_replayed. */
export function spendWebhookNonce(verified: VerifiedWebhook, options: Pick<VerifierOptions, 'replay' | 'replayScope' | 'now'>): Promise<void> {
  return spendNonce(verified, WEBHOOK_PROFILE, options);
}
