import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { redatedComplianceDir } from './compliance-tree';

/**
 * `@adcp/sdk`'s storyboard runner called programmatically, for what its CLI cannot do: check the
 * RFC 9421 signatures on the agent's webhooks against a JWKS (`webhook_signing`), and send the
 * signed-request probes through MCP (`request_signing.transport`; the CLI posts them to
 * per-operation URLs, a binding this agent does not have). Runs in a child
 * Node process (the SDK needs ESM-only jose 6, which Jest cannot load); one JSON job on stdin,
 * one JSON answer on stdout.
 */
export interface ProgrammaticRun {
  passed: number;
  failed: number;
  skipped: number;
  steps: { storyboard: string; step: string; task: string; passed: boolean; skipped?: boolean; skip_reason?: string; details?: string }[];
}

const run = promisify(execFile);

/** `skipPhases`: phase ids left out of the storyboard (e.g. a 90-second retry window a check does not need). */
export interface ProgrammaticJob {
  agentUrl: string;
  token: string;
  storyboard: string;
  /** Keys the agent's webhooks must verify against. */
  jwks?: Record<string, unknown>[];
  skipPhases?: string[];
  /** The runner's `request_signing` options (its signed-request probes). */
  requestSigning?: Record<string, unknown>;
  /** Values the storyboard reads as `$context.…` before any step sets them (e.g. governance_agent_url). */
  context?: Record<string, unknown>;
  /** The transport the runner calls the agent over (default MCP; A2A takes the agent's base URL). */
  protocol?: 'mcp' | 'a2a';
}

export async function runStoryboardWithJwks(job: ProgrammaticJob): Promise<ProgrammaticRun> {
  const child = run(process.execPath, [__filename, 'run'], {
    maxBuffer: 64 * 1024 * 1024,
    timeout: 600_000,
    env: { PATH: process.env.PATH ?? '', ADCP_COMPLIANCE_DIR: redatedComplianceDir() },
  });
  child.child.stdin!.end(JSON.stringify(job));
  const { stdout } = await child;
  return JSON.parse(stdout) as ProgrammaticRun;
}

async function main(): Promise<void> {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const job = JSON.parse(input) as ProgrammaticJob;
  const testing = require('@adcp/sdk/testing') as {
    resolveBundleOrStoryboard(id: string): unknown[];
    runStoryboard(url: string, storyboard: unknown, options: Record<string, unknown>): Promise<{ storyboard_id?: string; phases?: { steps?: Record<string, unknown>[] }[] } & Record<string, unknown>>;
  };
  const { StaticJwksResolver } = require('@adcp/sdk/signing') as { StaticJwksResolver: new (keys: unknown[]) => unknown };
  const out: ProgrammaticRun = { passed: 0, failed: 0, skipped: 0, steps: [] };
  for (const whole of testing.resolveBundleOrStoryboard(job.storyboard) as { phases?: { id: string }[] }[]) {
    const storyboard = { ...whole, phases: (whole.phases ?? []).filter((p) => !job.skipPhases?.includes(p.id)) };
    const result = await testing.runStoryboard(job.agentUrl, storyboard, {
      protocol: job.protocol ?? 'mcp',
      auth: { type: 'bearer', token: job.token },
      allow_http: true,
      sandbox: true,
      webhook_receiver: { mode: 'loopback_mock' },
      contracts: ['webhook_receiver_runner'],
      ...(job.jwks ? { webhook_signing: { jwks: new StaticJwksResolver(job.jwks) } } : {}),
      ...(job.requestSigning ? { request_signing: job.requestSigning } : {}),
      ...(job.context ? { context: job.context } : {}),
    });
    const id = String(result.storyboard_id ?? job.storyboard);
    for (const phase of result.phases ?? []) {
      for (const s of phase.steps ?? []) {
        const step = { storyboard: id, step: String(s.title ?? s.step_id), task: String(s.task), passed: s.passed === true, skipped: s.skipped === true, skip_reason: s.skip_reason as string | undefined, details: JSON.stringify(s.validations ?? s.error ?? '').slice(0, 800) };
        out.steps.push(step);
        if (step.skipped) out.skipped++;
        else if (step.passed) out.passed++;
        else out.failed++;
      }
    }
  }
  process.stdout.write(JSON.stringify(out));
}

if (require.main === module && process.argv[2] === 'run') {
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
