import { hmacMatches, hmacSignature } from '../../../src/signing/legacy-hmac';
import { readVector } from '../../support/vectors';

interface HmacVectors {
  secret: string;
  vectors: { id: string; timestamp: number; raw_body: string; expected_signature: string }[];
  rejection_vectors: { id: string; timestamp: number; raw_body: string; signature: string }[];
}

const v = readVector<HmacVectors>('legacy-and-envelope', 'webhook-hmac-sha256.json');

describe('legacy HMAC-SHA256 signer (webhook-hmac-sha256.json)', () => {
  it.each(v.vectors.map((x) => [x.id, x] as const))('%s', (_id, x) => {
    expect(hmacSignature(v.secret, x.timestamp, x.raw_body)).toBe(x.expected_signature);
  });

  it.each(v.rejection_vectors.map((x) => [x.id, x] as const))('a presented %s does not match', (_id, x) => {
    expect(hmacMatches(x.signature, hmacSignature(v.secret, x.timestamp, x.raw_body))).toBe(false);
  });
});
