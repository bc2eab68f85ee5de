import { fork, type ChildProcess } from 'node:child_process';
import { redatedComplianceDir } from './compliance-tree';

/**
 * The official AdCP storyboard runner, `runStoryboard` from `@adcp/sdk/testing` (6.11.0), called
 * programmatically in a child Node process over an IPC channel. Programmatically, not through the
 * `adcp storyboard run` CLI, because only the library takes a storyboard's starting context (the
 * governance storyboards read `$context.governance_agent_url`, which the CLI cannot set,
 * adcontextprotocol/adcp#3913), a JWKS to check webhook signatures against, and request-signing
 * probes over MCP; and it answers with structured per-step results instead of a report to parse.
 * In a child because the SDK needs ESM-only jose 6, which Jest's CommonJS runtime cannot load,
 * and so the SDK's globals, loggers and open handles die with it. The child reads the SDK's
 * storyboards re-dated (compliance-tree.ts) through ADCP_COMPLIANCE_DIR; nothing else is changed.
 */

export interface StoryboardJob {
  storyboard: string;
  /** MCP: `<gateway>/mcp`; A2A: the gateway's base URL (the runner finds the card there). */
  agentUrl: string;
  token: string;
  protocol: 'mcp' | 'a2a';
  /** Values the storyboard reads as `$context.…` before any step sets them (e.g. governance_agent_url). */
  context?: Record<string, unknown>;
  /** Keys the agent's webhooks must verify against (otherwise signature steps are not graded). */
  jwks?: Record<string, unknown>[];
  /** Phase ids left out of the storyboard. */
  skipPhases?: string[];
  /** The runner's `request_signing` options (its signed-request probes). */
  requestSigning?: Record<string, unknown>;
  /**
   * The storyboard's test kit (`prerequisites.test_kit`) as the runner's `test_kit` option, with
   * the credentials the operator provisioned for it: a step authenticating `from_test_kit` sends
   * its `auth.api_key`. Only the library takes one (the CLI never loads a storyboard's kit).
   */
  testKit?: Record<string, unknown>;
}

export interface StepOutcome {
  storyboard: string;
  step_id: string;
  title: string;
  task: string;
  passed: boolean;
  skipped: boolean;
  skip_reason?: string;
  /** For a failed step: the first failed validation's message, or the step's error. */
  reason?: string;
  /** The step's validations (or error) as JSON, cut at 800 characters. */
  details: string;
}

export interface StoryboardOutcome {
  storyboard: string;
  /** passed: the runner's overall verdict; skipped: no step ran (the agent lacks what it tests). */
  status: 'passed' | 'failed' | 'skipped';
  passed: number;
  failed: number;
  skipped: number;
  steps: StepOutcome[];
  /** Why it failed: failed steps, failed storyboard-wide assertions, or the runner's own error. */
  failures: { step: string; reason: string }[];
}

type ToChild = { type: 'resolve'; ids: string[] } | { type: 'run'; job: StoryboardJob };
type FromChild = { type: 'resolved'; unknown: string[] } | { type: 'result'; outcome: StoryboardOutcome } | { type: 'error'; message: string };

/** One child for many storyboards, one at a time (the SDK loads once: about two seconds). */
export class SdkStoryboardRunner {
  private child?: ChildProcess;
  private stderr = '';
  private pending?: { resolve: (m: FromChild) => void; reject: (e: Error) => void };

  /** `complianceDir`: another compliance tree than the SDK's own re-dated 3.0.6 (e.g. the 3.1.18 one). */
  constructor(private readonly opts: { timeoutMs?: number; complianceDir?: string } = {}) {}

  /** The ids (storyboards or bundles) the bundled tree does not have. */
  async unknownIds(ids: readonly string[]): Promise<string[]> {
    const answer = await this.ask({ type: 'resolve', ids: [...ids] }, 60_000);
    if (answer.type !== 'resolved') throw new Error(`storyboard runner: ${answer.type === 'error' ? answer.message : 'unexpected answer'}`);
    return answer.unknown;
  }

  /** Runs one storyboard (a bundle's storyboards add up into one outcome). */
  async run(job: StoryboardJob): Promise<StoryboardOutcome> {
    try {
      const answer = await this.ask({ type: 'run', job }, this.opts.timeoutMs ?? 600_000);
      if (answer.type === 'result') return answer.outcome;
      return failedOutcome(job.storyboard, answer.type === 'error' ? answer.message : 'unexpected answer');
    } catch (err) {
      return failedOutcome(job.storyboard, (err as Error).message);
    }
  }

  close(): void {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null && child.signalCode === null) {
      child.disconnect?.();
      child.kill('SIGTERM');
    }
  }

  private start(): ChildProcess {
    if (this.child) return this.child;
    this.stderr = '';
    const child = fork(__filename, ['child'], {
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ADCP_COMPLIANCE_DIR: this.opts.complianceDir ?? redatedComplianceDir() },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    child.stdout!.resume();
    child.stderr!.on('data', (c: Buffer) => (this.stderr = (this.stderr + c.toString('utf8')).slice(-4000)));
    child.on('message', (m: FromChild) => {
      const p = this.pending;
      this.pending = undefined;
      p?.resolve(m);
    });
    child.once('exit', (code, signal) => {
      if (this.child === child) this.child = undefined;
      const p = this.pending;
      this.pending = undefined;
      p?.reject(new Error(`the storyboard runner exited (${signal ?? code})${this.stderr ? `: ${this.stderr.trim().split('\n').slice(-5).join(' | ')}` : ''}`));
    });
    this.child = child;
    return child;
  }

  private ask(message: ToChild, timeoutMs: number): Promise<FromChild> {
    const child = this.start();
    return new Promise<FromChild>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending = undefined;
        this.close();
        reject(new Error(`the storyboard runner did not answer within ${Math.round(timeoutMs / 1000)} s`));
      }, timeoutMs);
      this.pending = {
        resolve: (m) => (clearTimeout(timer), resolve(m)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      };
      child.send(message);
    });
  }
}

function failedOutcome(storyboard: string, reason: string): StoryboardOutcome {
  return { storyboard, status: 'failed', passed: 0, failed: 0, skipped: 0, steps: [], failures: [{ step: '(runner)', reason }] };
}

/** The first line of a message, at most `max` characters. */
export function shortReason(text: string, max = 160): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

// ---- the child ----

interface SdkStep {
  step_id: string;
  title?: string;
  task: string;
  passed: boolean;
  skipped?: boolean;
  skip_reason?: string;
  error?: string;
  validations?: { passed: boolean; description?: string; error?: string }[];
}
interface SdkResult {
  storyboard_id?: string;
  overall_passed: boolean;
  passed_count: number;
  failed_count: number;
  skipped_count: number;
  phases?: { steps?: SdkStep[] }[];
  assertions?: { assertion_id: string; passed: boolean; description?: string; error?: string; scope?: string }[];
}

async function child(): Promise<void> {
  const testing = require('@adcp/sdk/testing') as {
    resolveBundleOrStoryboard(id: string): { id: string; phases?: { id: string }[] }[];
    runStoryboard(url: string, storyboard: unknown, options: Record<string, unknown>): Promise<SdkResult>;
    setAgentTesterLogger(logger: Record<string, () => void>): void;
  };
  const quiet = () => {};
  testing.setAgentTesterLogger({ info: quiet, error: quiet, warn: quiet, debug: quiet });
  let queue = Promise.resolve();
  process.on('message', (m: ToChild) => {
    queue = queue.then(async () => {
      try {
        if (m.type === 'resolve') process.send!({ type: 'resolved', unknown: m.ids.filter((id) => testing.resolveBundleOrStoryboard(id).length === 0) } satisfies FromChild);
        else process.send!({ type: 'result', outcome: await runOne(testing, m.job) } satisfies FromChild);
      } catch (err) {
        process.send!({ type: 'error', message: (err as Error).message ?? String(err) } satisfies FromChild);
      }
    });
  });
  process.on('disconnect', () => process.exit(0));
}

async function runOne(
  testing: { resolveBundleOrStoryboard(id: string): { id: string; phases?: { id: string }[] }[]; runStoryboard(url: string, storyboard: unknown, options: Record<string, unknown>): Promise<SdkResult> },
  job: StoryboardJob,
): Promise<StoryboardOutcome> {
  const storyboards = testing.resolveBundleOrStoryboard(job.storyboard);
  if (storyboards.length === 0) return failedOutcome(job.storyboard, `no storyboard or bundle "${job.storyboard}" in the bundled compliance tree`);
  const jwks = job.jwks ? new (require('@adcp/sdk/signing') as { StaticJwksResolver: new (keys: unknown[]) => unknown }).StaticJwksResolver(job.jwks) : undefined;
  const out: StoryboardOutcome = { storyboard: job.storyboard, status: 'skipped', passed: 0, failed: 0, skipped: 0, steps: [], failures: [] };
  let overall = true;
  for (const whole of storyboards) {
    const storyboard = { ...whole, phases: (whole.phases ?? []).filter((p) => !job.skipPhases?.includes(p.id)) };
    const result = await testing.runStoryboard(job.agentUrl, storyboard, {
      protocol: job.protocol,
      auth: { type: 'bearer', token: job.token },
      allow_http: true,
      sandbox: true,
      // The runner's own receiver on loopback: the gateway must be allowed to post to it
      // (ALLOW_PRIVATE_WEBHOOK_URLS=1) for the webhook steps.
      webhook_receiver: { mode: 'loopback_mock' },
      contracts: ['webhook_receiver_runner'],
      ...(jwks ? { webhook_signing: { jwks } } : {}),
      ...(job.requestSigning ? { request_signing: job.requestSigning } : {}),
      ...(job.context ? { context: job.context } : {}),
      ...(job.testKit ? { test_kit: job.testKit } : {}),
    });
    const id = String(result.storyboard_id ?? whole.id);
    overall &&= result.overall_passed;
    out.passed += result.passed_count;
    out.failed += result.failed_count;
    out.skipped += result.skipped_count;
    for (const phase of result.phases ?? []) {
      for (const s of phase.steps ?? []) {
        const failedCheck = (s.validations ?? []).find((v) => !v.passed);
        const failed = !s.passed && s.skipped !== true;
        const step: StepOutcome = {
          storyboard: id,
          step_id: s.step_id,
          title: String(s.title ?? s.step_id),
          task: String(s.task),
          passed: s.passed === true,
          skipped: s.skipped === true,
          ...(s.skip_reason ? { skip_reason: s.skip_reason } : {}),
          ...(failed ? { reason: shortReason(s.error ?? failedCheck?.error ?? failedCheck?.description ?? 'failed') } : {}),
          details: JSON.stringify(s.validations ?? s.error ?? '').slice(0, 800),
        };
        out.steps.push(step);
        if (failed) out.failures.push({ step: storyboards.length > 1 ? `${id}/${s.step_id}` : s.step_id, reason: step.reason! });
      }
    }
    for (const a of result.assertions ?? []) {
      if (!a.passed && a.scope !== 'step') out.failures.push({ step: `assertion ${a.assertion_id}`, reason: shortReason(a.error ?? a.description ?? 'failed') });
    }
  }
  const ran = out.passed + out.failed > 0;
  out.status = !overall ? 'failed' : ran ? 'passed' : 'skipped';
  if (out.status === 'failed' && out.failures.length === 0) out.failures.push({ step: '(storyboard)', reason: 'no required phase passed' });
  return out;
}

if (require.main === module && process.argv[2] === 'child') {
  child().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
