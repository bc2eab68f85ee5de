import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { redatedComplianceDir } from '../../src/conformance/compliance-tree';
import { tempDir } from './gateway';

/** The official storyboard runner's CLI, as `npx adcp` runs it. */
export const ADCP_BIN = path.join(path.dirname(require.resolve('@adcp/sdk/package.json')), 'bin', 'adcp.js');

export interface StoryboardStep {
  step: string;
  task: string;
  passed: boolean;
  skipped?: boolean;
  skip_reason?: string;
  error?: string;
  details?: string;
}

export interface StoryboardRun {
  summary: { overall_status: string; passed: number; failed: number; skipped: number; failures?: { storyboard_id: string; step_id: string; reason?: string; step_title?: string }[] };
  /** Every step of every storyboard the run executed, with its storyboard id. */
  steps: (StoryboardStep & { storyboard: string })[];
  stderr: string;
}

/**
 * Runs `adcp storyboard run` against an agent, as a user would from the command line, and reads
 * both its stable summary (`--summary-output`) and its full report (`--json`). The runner exits 0
 * even when steps fail, so callers judge the summary, never the exit code. The storyboards are
 * the SDK's own, re-dated (see src/conformance/compliance-tree.ts), unless `complianceDir` names
 * another release's tree (the 3.1.18 storyboards the 6.11 runner can drive).
 */
export function runStoryboards(opts: { agentUrl: string; token: string; storyboards: string; webhookReceiver?: boolean; timeoutMs?: number; protocol?: 'mcp' | 'a2a'; complianceDir?: string }): Promise<StoryboardRun> {
  const dir = tempDir('adcp-runner-');
  const summaryFile = path.join(dir, 'summary.json');
  const args = [ADCP_BIN, 'storyboard', 'run', opts.agentUrl, '--storyboards', opts.storyboards, '--allow-http', '--auth', opts.token, '--json', '--summary-output', summaryFile, '--timeout', '900'];
  if (opts.webhookReceiver) args.push('--webhook-receiver');
  if (opts.protocol) args.push('--protocol', opts.protocol);
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir, ADCP_COMPLIANCE_DIR: opts.complianceDir ?? redatedComplianceDir() },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`adcp storyboard run ${opts.storyboards} did not finish within ${opts.timeoutMs ?? 300_000} ms:\n${stderr.slice(-2000)}`));
    }, opts.timeoutMs ?? 300_000);
    child.once('exit', () => {
      clearTimeout(timer);
      try {
        const summary = JSON.parse(fs.readFileSync(summaryFile, 'utf8')) as StoryboardRun['summary'];
        const report = JSON.parse(stdout) as { tracks?: { scenarios?: { scenario: string; steps?: StoryboardStep[] }[] }[] };
        const steps = (report.tracks ?? []).flatMap((t) => (t.scenarios ?? []).flatMap((s) => (s.steps ?? []).map((st) => ({ ...st, storyboard: s.scenario }))));
        resolve({ summary, steps, stderr });
      } catch (err) {
        reject(new Error(`adcp storyboard run ${opts.storyboards} left no readable report (${(err as Error).message}):\n${stderr.slice(-3000)}`));
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

/**
 * What a run of one storyboard says is wrong: every failed step, and every skipped step but those
 * the agent cannot owe. A skip is owed unless (a) the step calls a tool the agent does not have
 * (`missing_tool`: a protocol it does not declare, such as sponsored intelligence), (b) it follows
 * such a skip (the runner cascades it to every later stateful step as `prerequisite_failed`),
 * (c) it is a branch not taken (`not_applicable`, `peer_branch_taken`), or (d) the caller checks
 * that step elsewhere (`checkedElsewhere`: task → the skip reason the CLI gives it).
 */
export function problemsOf(run: StoryboardRun, agentTools: ReadonlySet<string>, checkedElsewhere: Readonly<Record<string, string>> = {}): string[] {
  const problems: string[] = [];
  if (run.summary.passed === 0) problems.push(`no step passed (status ${run.summary.overall_status})`);
  let cascading = false;
  for (const st of run.steps) {
    const where = `${st.storyboard} / ${st.step} [${st.task}]`;
    if (!st.skipped) {
      if (!st.passed) problems.push(`FAILED ${where}: ${(st.details ?? st.error ?? '').slice(0, 600)}`);
      continue;
    }
    const reason = st.skip_reason ?? '';
    if (reason === 'missing_tool' && !agentTools.has(st.task)) cascading = true;
    else if ((reason === 'prerequisite_failed' || reason === 'controller_seeding_failed') && cascading) continue;
    else if (reason === 'not_applicable' || reason === 'peer_branch_taken') continue;
    else if (checkedElsewhere[st.task] === reason) continue;
    else problems.push(`SKIPPED ${where}: ${reason} ${(st.error ?? '').slice(0, 300)}`);
  }
  for (const f of run.summary.failures ?? []) {
    if (!problems.some((p) => p.includes(f.storyboard_id))) problems.push(`FAILED ${f.storyboard_id} / ${f.step_id}: ${f.reason ?? ''}`);
  }
  if (run.summary.failed > 0 && problems.length === 0) problems.push(`the summary counts ${run.summary.failed} failed steps`);
  return problems;
}
