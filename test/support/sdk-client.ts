import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/**
 * `@adcp/sdk`'s own buyer client (ADCPMultiAgentClient, over MCP or A2A) calling an agent, step by step,
 * in a child Node process (the SDK needs ESM-only jose 6, which Jest cannot load). Each step is
 * a client method and its params; the answer is what the client made of each response.
 */
export interface ClientStep {
  method: string;
  params: Record<string, unknown>;
}

export interface ClientResult {
  method: string;
  success: boolean;
  status?: string;
  data?: Record<string, any>;
  error?: string;
  /** The AdCP error the client found in a failure (its code, recovery, retry_after…), if any. */
  adcpError?: Record<string, unknown>;
  submitted?: Record<string, unknown>;
}

const run = promisify(execFile);

/**
 * `protocol`: how the client reaches the agent (MCP at its endpoint; A2A at the agent's base URL).
 * `webhooks`: the client's own webhook settings (a URL template with `{task_type}` and
 * `{operation_id}`, and the HMAC secret it registers and verifies with). A `handleWebhook` step
 * hands the client a received webhook (`{payload, taskType, operationId, signature, timestamp,
 * rawBody}`): it answers what the client made of it, or its error when it refused it.
 */
export interface ClientJob {
  agentUrl: string;
  token: string;
  steps: ClientStep[];
  protocol?: 'mcp' | 'a2a';
  webhooks?: { urlTemplate: string; secret: string };
}

export async function sdkClientSteps(job: ClientJob): Promise<ClientResult[]> {
  const child = run(process.execPath, [__filename, 'run'], { maxBuffer: 16 * 1024 * 1024, timeout: 120_000, env: { PATH: process.env.PATH ?? '' } });
  child.child.stdin!.end(JSON.stringify(job));
  const { stdout } = await child;
  return JSON.parse(stdout) as ClientResult[];
}

async function main(): Promise<void> {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const job = JSON.parse(input) as ClientJob;
  // stdout carries the answer; the client's own logging ("Webhook signature is valid") goes aside.
  console.log = (...args: unknown[]) => process.stderr.write(`${args.map(String).join(' ')}\n`);
  const { ADCPMultiAgentClient } = require('@adcp/sdk') as { ADCPMultiAgentClient: new (agents: unknown[], options?: unknown) => { agent(id: string): Record<string, (...args: unknown[]) => Promise<any>> } };
  let heard: Record<string, unknown> | undefined;
  const options = job.webhooks
    ? {
        webhookUrlTemplate: job.webhooks.urlTemplate,
        webhookSecret: job.webhooks.secret,
        onActivity: (a: Record<string, unknown>) => {
          if (a.type === 'webhook_received') heard = a;
        },
      }
    : undefined;
  const client = new ADCPMultiAgentClient([{ id: 'gateway', name: 'adcp-gateway', agent_uri: job.agentUrl, protocol: job.protocol ?? 'mcp', auth_token: job.token }], options);
  const agent = client.agent('gateway');
  const out: ClientResult[] = [];
  for (const step of job.steps) {
    if (step.method === 'handleWebhook') {
      const p = step.params as { payload: unknown; taskType: string; operationId: string; signature?: string; timestamp?: string; rawBody: string };
      heard = undefined;
      try {
        await agent.handleWebhook!(p.payload, p.taskType, p.operationId, p.signature, p.timestamp, p.rawBody);
        out.push({ method: step.method, success: true, data: heard });
      } catch (err) {
        out.push({ method: step.method, success: false, error: (err as Error).message });
      }
      continue;
    }
    const method = agent[step.method];
    if (typeof method !== 'function') throw new Error(`the SDK client has no method ${step.method}`);
    // executeTask(name, params): any tool by its AdCP name (tasks_get has no typed method).
    const r = step.method === 'executeTask' ? await method.call(agent, step.params.task, step.params.params) : await method.call(agent, step.params);
    out.push({ method: step.method, success: r?.success === true, status: r?.status, data: r?.data, error: r?.error === undefined ? undefined : String(typeof r.error === 'object' ? JSON.stringify(r.error) : r.error), adcpError: r?.adcpError, submitted: r?.submitted });
  }
  process.stdout.write(JSON.stringify(out));
  process.exit(0);
}

if (require.main === module && process.argv[2] === 'run') {
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
