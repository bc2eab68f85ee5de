import { SdkStoryboardRunner, type StoryboardJob } from '../../src/conformance/sdk-runner';

/**
 * `@adcp/sdk`'s storyboard runner called programmatically (src/conformance/sdk-runner.ts, the one
 * `adcp-gateway conformance` uses), for what its CLI cannot do: check the RFC 9421 signatures on
 * the agent's webhooks against a JWKS (`webhook_signing`), send the signed-request probes through
 * MCP (`request_signing.transport`; the CLI posts them to per-operation URLs, a binding this agent
 * does not have), and set a storyboard's starting context (`governance_agent_url`).
 */
export interface ProgrammaticRun {
  passed: number;
  failed: number;
  skipped: number;
  steps: { storyboard: string; step_id: string; step: string; task: string; passed: boolean; skipped?: boolean; skip_reason?: string; details?: string }[];
}

/** `skipPhases`: phase ids left out of the storyboard (e.g. a 90-second retry window a check does not need). */
export type ProgrammaticJob = Omit<StoryboardJob, 'protocol'> & {
  /** The transport the runner calls the agent over (default MCP; A2A takes the agent's base URL). */
  protocol?: 'mcp' | 'a2a';
  /** Another compliance tree than the SDK's re-dated 3.0.6 one (ADCP_COMPLIANCE_DIR). */
  complianceDir?: string;
};

export async function runStoryboardWithJwks(job: ProgrammaticJob): Promise<ProgrammaticRun> {
  const { complianceDir, ...rest } = job;
  const runner = new SdkStoryboardRunner({ complianceDir });
  try {
    const outcome = await runner.run({ ...rest, protocol: job.protocol ?? 'mcp' });
    if (outcome.steps.length === 0 && outcome.failures.length > 0) throw new Error(`storyboard ${job.storyboard}: ${outcome.failures.map((f) => f.reason).join('; ')}`);
    const out: ProgrammaticRun = { passed: 0, failed: 0, skipped: 0, steps: [] };
    for (const s of outcome.steps) {
      out.steps.push({ storyboard: s.storyboard, step_id: s.step_id, step: s.title, task: s.task, passed: s.passed, skipped: s.skipped, skip_reason: s.skip_reason, details: s.details });
      if (s.skipped) out.skipped++;
      else if (s.passed) out.passed++;
      else out.failed++;
    }
    return out;
  } finally {
    runner.close();
  }
}
