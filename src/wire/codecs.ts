import type { AnswerCodec } from './answer-codec';
import { adcp30 } from './adcp3/answers';
import { adcp31 } from './adcp31/answers';
import { DEFAULT_VERSION, negotiateVersion, SUPPORTED_VERSIONS, type AdcpRelease } from './version';

type Obj = Record<string, any>;

/** The reads that answer about one task, with its result inside. */
const TASK_READS: ReadonlySet<string> = new Set(['tasks_get', 'get_task_status']);

const isRelease = (v: unknown): v is AdcpRelease => (SUPPORTED_VERSIONS as readonly unknown[]).includes(v);

/**
 * A task's result is written in the release its call was answered in (recorded with the task;
 * the read names it at `adcp_version` when not 3.0), whichever release the poll negotiated: a 3.1
 * buy approved later reads as 3.1's create answer, a 3.0 one as 3.0's, in tasks_get and
 * get_task_status alike. The poll's own codec writes the rest of the answer (and its echo).
 */
function withTaskResultsInTheirRelease(codec: AnswerCodec): AnswerCodec {
  return {
    ...codec,
    answer(task, r, ctx) {
      if (!TASK_READS.has(task)) return codec.answer(task, r, ctx);
      const { adcp_version: release, result, ...read } = r as Obj;
      const answer = codec.answer(task, read, ctx);
      if (!result) return answer;
      return { ...answer, result: codecFor(isRelease(release) ? release : DEFAULT_VERSION).answer(String(read.task_type), result, ctx) };
    },
  };
}

/** Each release this agent serves, by the name `negotiateVersion` chooses it by. */
export const CODECS: Readonly<Record<AdcpRelease, AnswerCodec>> = { '3.0': withTaskResultsInTheirRelease(adcp30), '3.1': withTaskResultsInTheirRelease(adcp31) };

/** The codec of a call's negotiated release; before negotiation (or when it failed), the default's. */
export function codecFor(version: AdcpRelease = DEFAULT_VERSION): AnswerCodec {
  return CODECS[version];
}

/** A task's result (its answer had it been synchronous) in the release its call was answered in: webhooks, A2A streams. */
export function taskResultIn(release: AdcpRelease, taskType: string, result: Obj, now: Date): Obj {
  return codecFor(release).answer(taskType, result, { now });
}

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
