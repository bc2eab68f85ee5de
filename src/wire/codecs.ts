import type { AnswerCodec } from './answer-codec';
import { adcp30 } from './adcp3/answers';
import { adcp31 } from './adcp31/answers';
import { DEFAULT_VERSION, type AdcpRelease } from './version';

/** Each release this agent serves, by the name `negotiateVersion` chooses it by. */
export const CODECS: Readonly<Record<AdcpRelease, AnswerCodec>> = { '3.0': adcp30, '3.1': adcp31 };

/** The codec of a call's negotiated release; before negotiation (or when it failed), the default's. */
export const codecFor = (version: AdcpRelease = DEFAULT_VERSION): AnswerCodec => CODECS[version];
