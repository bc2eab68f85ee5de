import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { MemoryReplayStore, verifyWebhook, WebhookVerificationError } from '../../signing/webhook-verifier';

const input = z.object({
  method: z.string().min(1),
  url: z.string().min(1),
  headers: z.record(z.string(), z.union([z.string(), z.array(z.string())])),
  body: z.string(),
});

/**
 * `adcp-gateway webhooks verify --jwks <file> [--now <unix>]`: for people debugging webhooks.
 * Reads `{"method","url","headers","body"}` on stdin and prints one JSON line, `{"success":true}`
 * or `{"success":false,"error_code":"webhook_…"}`; the exit code is 0 or 1. Bad usage or input
 * is an error_code too (`usage_error`, `input_malformed`), so scripts only parse one shape; bad
 * usage exits 2, as every other command's does.
 */
export async function webhooksVerifyCommand(args: string[], stdin: NodeJS.ReadableStream = process.stdin): Promise<number> {
  // stdout carries exactly the verdict; the human explanation goes to stderr.
  const out = ({ message, ...verdict }: { success: boolean; error_code?: string; message?: string }) => {
    process.stdout.write(JSON.stringify(verdict) + '\n');
    if (message) process.stderr.write(`${message}\n`);
  };
  let values: { jwks?: string; now?: string };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args, allowPositionals: true, options: { jwks: { type: 'string' }, now: { type: 'string' } } }));
  } catch (err) {
    out({ success: false, error_code: 'usage_error', message: (err as Error).message });
    return 2;
  }
  if (positionals[0] !== 'verify' || !values.jwks || (values.now !== undefined && !/^\d+$/.test(values.now))) {
    out({ success: false, error_code: 'usage_error', message: 'usage: adcp-gateway webhooks verify --jwks <file> [--now <unix seconds>]' });
    return 2;
  }
  let keys: Record<string, unknown>[];
  try {
    const parsed = JSON.parse(fs.readFileSync(values.jwks, 'utf8')) as { keys?: unknown };
    if (!Array.isArray(parsed.keys)) throw new Error('not a JWK set ({"keys":[…]})');
    keys = parsed.keys as Record<string, unknown>[];
  } catch (err) {
    out({ success: false, error_code: 'jwks_unreadable', message: (err as Error).message });
    return 1;
  }
  let text = '';
  for await (const chunk of stdin) text += chunk;
  let request: z.infer<typeof input>;
  try {
    request = input.parse(JSON.parse(text));
  } catch {
    out({ success: false, error_code: 'input_malformed', message: 'stdin must be {"method","url","headers","body"} with body a string' });
    return 1;
  }
  try {
    const verified = await verifyWebhook(request, {
      resolveKey: async (kid) => keys.find((k) => k.kid === kid) as never,
      replay: new MemoryReplayStore(),
      ...(values.now ? { now: Number(values.now) } : {}),
    });
    out({ success: true, message: `verified: keyid ${verified.keyid}` });
    return 0;
  } catch (err) {
    if (!(err instanceof WebhookVerificationError)) throw err;
    out({ success: false, error_code: err.code, message: `step ${err.step}: ${err.message}` });
    return 1;
  }
}
