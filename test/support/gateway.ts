import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { startGateway, type RunningGateway } from '../../src/main';

export const ROOT = path.resolve(__dirname, '..', '..', '..');
export const BIN = path.join(ROOT, 'bin', 'adcp-gateway.js');

export function tempDir(prefix = 'adcp-gw-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/**
 * Request and points budgets far above what any suite sends, so a suite trips a limit only when it
 * sets one: the defaults are what test/integration/resource-limits.test.ts measures.
 */
export const ROOMY_LIMITS: Record<string, string> = {
  REQUESTS_PER_MINUTE: 'anonymous=1000000,buyer=1000000,seller=1000000,admin=1000000',
  GRAPHQL_POINTS_PER_MINUTE: 'anonymous=100000000,buyer=100000000,seller=100000000,admin=100000000',
  AUTH_FAILURES_PER_MINUTE: '1000000',
  WEBHOOK_REQUESTS_PER_MINUTE: '100000000',
};

/** The gateway in this process, on an ephemeral loopback port, with a fresh DATA_DIR by default. */
export async function startTestGateway(env: Record<string, string> = {}): Promise<RunningGateway & { dataDir: string }> {
  const dataDir = env.DATA_DIR ?? tempDir();
  const gw = await startGateway(loadConfig({ HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent', DATA_DIR: dataDir, ...ROOMY_LIMITS, ...env }));
  return Object.assign(gw, { dataDir });
}

export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  stderr: () => string;
  /** SIGTERM and wait for exit; returns the exit code. */
  stop: () => Promise<number | null>;
}

/**
 * `adcp-gateway serve` as a child process (the real bin). Resolves once it logs its URL; rejects
 * with its stderr if it exits first or does not listen within `timeoutMs`.
 */
export function spawnGateway(env: Record<string, string>, timeoutMs = 30_000): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [BIN, 'serve'], {
    cwd: ROOT,
    // LOG_LEVEL stays info: the "listening" log line is how the test learns the port.
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', ...ROOMY_LIMITS, ...env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`gateway did not listen within ${timeoutMs} ms:\n${err}`));
    }, timeoutMs);
    child.stdout!.resume();
    child.stderr!.on('data', (chunk: Buffer) => {
      err += chunk.toString('utf8');
      const m = /"url":"(http:\/\/[^"]+)".*"msg":"adcp-gateway listening"/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve({
          url: m[1]!,
          child,
          stderr: () => err,
          stop: async () => {
            if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
            return exited;
          },
        });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code} before listening:\n${err}`));
    });
  });
}

export interface GraphQLResult<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: { data?: T; errors?: { message: string; extensions?: Record<string, unknown> }[] };
}

export async function graphql<T = Record<string, any>>(
  url: string,
  query: string,
  variables?: Record<string, unknown>,
  key?: string,
): Promise<GraphQLResult<T>> {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as GraphQLResult<T>['body'] };
}
