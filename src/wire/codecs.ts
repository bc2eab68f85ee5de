import type { AnswerCodec } from './answer-codec';
import { adcp30 } from './adcp3/answers';
import { adcp31 } from './adcp31/answers';
import { DEFAULT_VERSION, negotiateVersion, type AdcpRelease } from './version';

/** Each release this agent serves, by the name `negotiateVersion` chooses it by. */
export const CODECS: Readonly<Record<AdcpRelease, AnswerCodec>> = { '3.0': adcp30, '3.1': adcp31 };

/** The codec of a call's negotiated release; before negotiation (or when it failed), the default's. */
export const codecFor = (version: AdcpRelease = DEFAULT_VERSION): AnswerCodec => CODECS[version];

/**
 * The codec and envelope of a request refused before its tool runs (a credential, a forbidden
 * key): the release its arguments pin when they pin one this agent serves, else the default's,
 * without an echo (a pin that does not negotiate is not this refusal's error).
 */
export function codecForArgs(args: Readonly<Record<string, unknown>>): { codec: AnswerCodec; envelope: Record<string, unknown> } {
  try {
    const negotiated = negotiateVersion(args);
    const codec = codecFor(negotiated.version);
    return { codec, envelope: codec.envelope(negotiated) };
  } catch {
    return { codec: codecFor(), envelope: {} };
  }
}
