import { checkLegacyHmac, weakLegacySecret } from '../../../src/signing/legacy-hmac';
import { duplicateKeys } from '../../../src/signing/strict-json';
import { detectFormat, envelopeError, extractData } from '../../../src/domain/receiver/envelope';
import { readVector } from '../../support/vectors';

interface HmacVectors {
  secret: string;
  vectors: { id: string; timestamp: number; raw_body: string; expected_signature: string; expected_verifier_action?: string }[];
  rejection_vectors: { id: string; timestamp: number | string; raw_body: string; signature: string | null; current_time?: number }[];
  secret_rejection_vectors: { description: string; secret: string }[];
}
const hmac = readVector<HmacVectors>('legacy-and-envelope', 'webhook-hmac-sha256.json');

describe('legacy HMAC receiver (webhook-hmac-sha256.json)', () => {
  it.each(hmac.vectors.map((v) => [v.id, v] as const))('%s', (_id, v) => {
    expect(checkLegacyHmac(hmac.secret, { signature: v.expected_signature, timestamp: v.timestamp }, v.raw_body, v.timestamp)).toBeUndefined();
    // The body check after the signature: duplicate keys are malformed even when the HMAC is good.
    if (v.expected_verifier_action === 'reject-malformed') expect(duplicateKeys(v.raw_body)).toEqual(['status']);
  });

  it.each(hmac.rejection_vectors.map((v) => [v.id, v] as const))('rejects %s', (_id, v) => {
    const now = v.current_time ?? (typeof v.timestamp === 'number' ? v.timestamp : 1_700_000_000);
    expect(checkLegacyHmac(hmac.secret, { signature: v.signature, timestamp: v.timestamp }, v.raw_body, now)).toBeDefined();
  });

  it.each(hmac.secret_rejection_vectors.map((v) => [v.description, v] as const))('refuses the secret: %s', (_d, v) => {
    expect(weakLegacySecret(v.secret)).toBeDefined();
  });
  it('accepts a strong secret', () => expect(weakLegacySecret(hmac.secret)).toBeUndefined());
});

describe('envelope detection and extraction (webhook-payload-extraction.json)', () => {
  const { vectors } = readVector<{ vectors: { id: string; payload: Record<string, unknown>; expected_format: string; expected_data: unknown }[] }>('legacy-and-envelope', 'webhook-payload-extraction.json');
  it.each(vectors.map((v) => [v.id, v] as const))('%s', (_id, v) => {
    expect(detectFormat(v.payload)).toBe(v.expected_format);
    expect(extractData(v.payload)).toEqual(v.expected_data);
  });
});

describe('receiver envelope checks (webhook-receiver-envelope.json)', () => {
  const env = readVector<{ positive: { id: string; payload: unknown }[]; negative: { id: string; payload: unknown; expected_error: string }[] }>('legacy-and-envelope', 'webhook-receiver-envelope.json');
  it.each(env.positive.map((v) => [v.id, v] as const))('accepts %s', (_id, v) => expect(envelopeError(v.payload)).toBeUndefined());
  it.each(env.negative.map((v) => [v.id, v] as const))('rejects %s', (_id, v) => expect(envelopeError(v.payload)).toBe(v.expected_error));
});
