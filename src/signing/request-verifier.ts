import { lowerHeaders, SignatureVerificationError, verifySignature, type SignatureProfile, type SignedRequest, type VerifiedSignature, type VerifierOptions } from './signature-verifier';

export const REQUEST_SIGNING_TAG = 'adcp/request-signing/v1';

/** What an agent declares of request signing in get_adcp_capabilities (`request_signing`). */
export interface RequestSigningCapability {
  supported: boolean;
  /** Whether a signer must, may or must not bind the body with `content-digest`. */
  covers_content_digest: 'required' | 'either' | 'forbidden';
  /** AdCP tools that refuse unsigned calls. */
  required_for: readonly string[];
  /** JSON-RPC methods of the binding (`tasks/cancel`, …) that refuse unsigned calls. */
  protocol_methods_required_for?: readonly string[];
}

export interface RequestVerifierOptions extends VerifierOptions {
  capability: RequestSigningCapability;
  /** The AdCP tool the request calls, when known. */
  operation?: string;
  /** The JSON-RPC method of the request, when it is one. */
  protocolMethod?: string;
}

/** The request-signing profile for a capability: its digest policy, the rest fixed by the spec. */
function requestProfile(capability: RequestSigningCapability): SignatureProfile {
  return {
    prefix: 'request',
    tag: REQUEST_SIGNING_TAG,
    mandatory: ['@method', '@target-uri', '@authority'],
    contentTypeWithBody: true,
    contentDigest: capability.covers_content_digest,
    purposes: new Set(['request-signing']),
    asciiHostOnly: true,
    strictJsonBody: false,
    // The spec's production minimum; an operator may set less for a test counterparty.
    defaultPerKeyidCap: 1_000_000,
  };
}

const MAX_INSPECTED_BODY = 1_000_000;

/**
 * Whether an unsigned body registers webhook credentials (`push_notification_config.authentication`
 * anywhere in it): a bearer token alone must not be able to point a seller's signed callbacks, with
 * their shared secret, somewhere else, so such a call must be signed whatever `required_for` says.
 * A body too large to look into is treated as one that does.
 */
function registersWebhookCredentials(body: Buffer | string): boolean {
  if (body.length === 0) return false;
  if (body.length > MAX_INSPECTED_BODY) return true;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString());
  } catch {
    return false;
  }
  const stack: { value: unknown; depth: number }[] = [{ value: parsed, depth: 0 }];
  while (stack.length > 0) {
    const { value, depth } = stack.pop()!;
    if (value === null || typeof value !== 'object' || depth > 64) continue;
    const record = value as Record<string, unknown>;
    const config = record.push_notification_config ?? record.pushNotificationConfig;
    if (config && typeof config === 'object' && (config as Record<string, unknown>).authentication !== undefined) return true;
    for (const child of Object.values(record)) stack.push({ value: child, depth: depth + 1 });
  }
  return false;
}

/**
 * The AdCP request verifier (security.mdx, "Verifier checklist for requests"). An unsigned request
 * passes (`unsigned`) unless its tool or JSON-RPC method is one the capability requires signed, or
 * it registers webhook credentials (pre-check 0: `request_signature_required`); a signed one must
 * pass every step of the checklist (verifySignature), whether or not it had to be signed.
 * Throws SignatureVerificationError with the spec's `request_*` code.
 */
export async function verifyRequestSignature(req: SignedRequest, options: RequestVerifierOptions): Promise<VerifiedSignature | { unsigned: true }> {
  const headers = lowerHeaders(req.headers);
  if (!headers.has('signature') && !headers.has('signature-input')) {
    const { capability, operation, protocolMethod } = options;
    if (operation !== undefined && capability.required_for.includes(operation)) {
      throw new SignatureVerificationError('request_signature_required', '0', `${operation} must be called with a signed request`);
    }
    if (protocolMethod !== undefined && capability.protocol_methods_required_for?.includes(protocolMethod)) {
      throw new SignatureVerificationError('request_signature_required', '0', `${protocolMethod} must be called with a signed request`);
    }
    if (registersWebhookCredentials(req.body)) {
      throw new SignatureVerificationError('request_signature_required', '0', 'a request that registers push_notification_config.authentication must be signed');
    }
    return { unsigned: true };
  }
  return verifySignature(req, requestProfile(options.capability), options);
}
