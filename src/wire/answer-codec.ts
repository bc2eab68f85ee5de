import type { AppError } from '../shared/errors';
import type { AdcpRelease, NegotiatedVersion } from './version';

type Obj = Record<string, any>;

/** What an encoder may need besides the result: the gateway's now, for derived statuses. */
export interface AnswerContext {
  now: Date;
}

/**
 * One AdCP release's answers (DESIGN.md §3.9: a new wire version is a new codec). The MCP and
 * A2A bindings negotiate the release a call is answered in (`./version.ts`) and hand the call's
 * task result, or its error, to that release's codec; nothing else in them knows which release
 * it is.
 */
export interface AnswerCodec {
  readonly version: AdcpRelease;
  /** A task's result as this release answers it (a task it has no encoder for answers as it is). */
  answer(task: string, result: Obj, ctx: AnswerContext): Obj;
  /** `get_adcp_capabilities` in this release, from what the agent declares (3.0's shape). */
  capabilities(declared: Obj): Obj;
  /** A failed call's error object (`core/error.json`), with its fields named as the request named them. */
  error(task: string, request: unknown, err: AppError): Obj;
  /** Root fields of every answer to a call served in this release, success or error (the version echo). */
  envelope(negotiated: NegotiatedVersion): Obj;
  /** Root fields an error answer adds in this release (3.1: the task status `failed`, which its envelope requires). */
  failedEnvelope(): Obj;
}
