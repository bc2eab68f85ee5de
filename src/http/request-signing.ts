import { ConfigError, readConfigFile } from '../config';
import type { JsonWebKey } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Principal } from '../application/api-keys';
import { verifyRequestSignature, type RequestSigningCapability } from '../signing/request-verifier';
import type { ReplayStore } from '../signing/signature-verifier';

/**
 * Incoming RFC 9421 request signatures (AdCP's transport-layer profile): the buyers whose agents
 * sign, with their public keys, and which calls must be signed. Configured by the operator in
 * REQUEST_SIGNERS_FILE; without it the agent does not declare `request_signing` and ignores
 * Signature headers.
 */
const signersFileSchema = z.object({
  /** Whether signers must, may or must not bind the body with `content-digest`. */
  covers_content_digest: z.enum(['required', 'either', 'forbidden']).default('either'),
  /** AdCP tools every caller must sign. */
  required_for: z.array(z.string().regex(/^[a-z][a-z0-9_]*$/)).default([]),
  /** JSON-RPC methods every caller must sign (`tasks/cancel`, …). */
  protocol_methods_required_for: z.array(z.string().min(1)).default([]),
  /** Live nonces one key may hold within the validity window (the spec's production minimum: 1,000,000). */
  per_keyid_cap: z.number().int().min(1).default(1_000_000),
  signers: z
    .array(
      z.object({
        /** The buyer organisation a verified signature acts for (as its API keys do). */
        org: z.string().min(1),
        /** Its public keys (`adcp_use: "request-signing"`); private members, if any, are dropped. */
        jwks: z.object({ keys: z.array(z.record(z.string(), z.unknown())) }),
        revoked_kids: z.array(z.string()).default([]),
        /** Every call this organisation makes must be signed, even with an API key. */
        require_signature: z.boolean().default(false),
      }),
    )
    .min(1),
});

export type SignersFile = z.infer<typeof signersFileSchema>;

const PUBLIC_MEMBERS = ['kid', 'kty', 'crv', 'x', 'y', 'alg', 'use', 'key_ops', 'adcp_use'] as const;

/** A verified signature, or an unsigned request the policy lets through to bearer authentication. */
export type SignatureOutcome = { signer: Principal } | { unsigned: true };

export class RequestSigning {
  readonly capability: RequestSigningCapability;
  private readonly keys = new Map<string, { jwk: JsonWebKey; org: string }>();
  private readonly revoked = new Set<string>();
  private readonly requiredOrgs = new Set<string>();
  constructor(
    private readonly file: SignersFile,
    private readonly replay: ReplayStore,
  ) {
    this.capability = {
      supported: true,
      covers_content_digest: file.covers_content_digest,
      required_for: file.required_for,
      // A 3.1 field: declared only when in use, so a 3.0 answer keeps its 3.0 shape.
      ...(file.protocol_methods_required_for.length ? { protocol_methods_required_for: file.protocol_methods_required_for } : {}),
    };
    for (const signer of file.signers) {
      if (signer.require_signature) this.requiredOrgs.add(signer.org);
      for (const kid of signer.revoked_kids) this.revoked.add(kid);
      for (const key of signer.jwks.keys) {
        const jwk = Object.fromEntries(PUBLIC_MEMBERS.filter((m) => key[m] !== undefined).map((m) => [m, key[m]])) as JsonWebKey;
        this.keys.set(key.kid as string, { jwk, org: signer.org });
      }
    }
  }

  /** REQUEST_SIGNERS_FILE, read and checked before anything opens (a bad file stops the gateway with its reason). */
  static read(file: string): SignersFile {
    const signers = readConfigFile('REQUEST_SIGNERS_FILE', file, signersFileSchema);
    // A key id names one key of one signer: a signature must not be able to act for two.
    const kids = signers.signers.flatMap((s) => s.jwks.keys.map((k) => k.kid));
    if (kids.some((kid) => typeof kid !== 'string')) throw new ConfigError(`REQUEST_SIGNERS_FILE ${file}: every key needs a kid`);
    const twice = kids.filter((kid, i) => kids.indexOf(kid) !== i);
    if (twice.length) throw new ConfigError(`REQUEST_SIGNERS_FILE ${file}: kid ${String(twice[0])} appears more than once`);
    return signers;
  }

  /** Whether this organisation's calls must all be signed. */
  requiresSignature(org: string): boolean {
    return this.requiredOrgs.has(org);
  }

  /**
   * Verifies the request's signature at `url` (the URL the signer addressed: this gateway's
   * public origin and the request's path). Throws SignatureVerificationError with the spec's code.
   */
  async verify(req: FastifyRequest, url: string, rawBody: string, call: { operation?: string; protocolMethod?: string }): Promise<SignatureOutcome> {
    const verified = await verifyRequestSignature(
      { method: req.method, url, headers: req.headers, body: rawBody },
      {
        capability: this.capability,
        ...call,
        resolveKey: async (kid) => this.keys.get(kid)?.jwk,
        replay: this.replay,
        // Request keys and webhook keys share the nonce table: scoped apart by a prefix (a kid
        // names one key of one signer: REQUEST_SIGNERS_FILE refuses it twice).
        replayScope: 'request:',
        revocation: { revokedKids: this.revoked, stale: false },
        perKeyidCap: this.file.per_keyid_cap,
      },
    );
    if ('unsigned' in verified) return verified;
    const org = this.keys.get(verified.keyid)!.org;
    return { signer: { keyId: `signer:${verified.keyid}`, org, role: 'buyer' } };
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** A JSON request's body as received (the server decorates requests with null). */
    rawBody: string | null;
  }
}
