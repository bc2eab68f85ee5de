import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { issueApiKey } from '../../src/application/api-keys';
import { BIN, ROOT, spawnGateway, startTestGateway, tempDir, type GatewayProcess } from '../support/gateway';

const run = promisify(execFile);

/**
 * call_adcp_agent naming another agent: forwarded over MCP with @adcp/sdk's client, only to an
 * agent the operator configured credentials for. Gateway A runs as a process (the SDK client is
 * ESM underneath, which Jest's module system cannot load); agent B is a second gateway whose
 * public name is mapped to its loopback origin through the REGISTRY_ORIGIN_OVERRIDES seam.
 */
describe('call_adcp_agent forwarding to another agent', () => {
  let b: Awaited<ReturnType<typeof startTestGateway>>;
  let a: GatewayProcess;
  let keyA: string;

  const call = async (args: Record<string, unknown>) => {
    const res = await fetch(`${a.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${keyA}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'call_adcp_agent', arguments: args } }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { result: { isError?: boolean; structuredContent: Record<string, any> } }).result;
  };

  beforeAll(async () => {
    b = await startTestGateway();
    const keyB = (await issueApiKey(b.app.store, { org: 'gateway-a', role: 'buyer' }, { now: new Date().toISOString() })).key;
    const dataDir = tempDir();
    keyA = (await run(process.execPath, [BIN, 'keys', 'create', '--org', 'acme', '--role', 'buyer'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir } })).stdout.trim();
    a = await spawnGateway({
      DATA_DIR: dataDir,
      REGISTRY_ORIGIN_OVERRIDES: `seller-b.example.com=${b.url}`,
      FORWARD_AGENT_CREDENTIALS: JSON.stringify({ 'https://seller-b.example.com/mcp': keyB }),
    });
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
  });

  it('runs the task on the configured agent and answers what it answered', async () => {
    const forwarded = await call({ task: 'get_adcp_capabilities', params: {}, agent_url: 'https://seller-b.example.com/mcp' });
    expect(forwarded.isError).toBeFalsy();
    expect(forwarded.structuredContent).toMatchObject({ adcp: { major_versions: [3] }, supported_protocols: expect.arrayContaining(['media_buy']) });
    const products = await call({ task: 'get_products', params: { buying_mode: 'brief', brief: 'sports video' }, agent_url: 'https://seller-b.example.com/mcp' });
    expect(products.isError).toBeFalsy();
    expect(JSON.stringify(products.structuredContent)).toContain('sports_video_auction');
  });

  it('refuses agents without configured credentials, and private addresses', async () => {
    const unknown = await call({ task: 'get_products', params: {}, agent_url: 'https://elsewhere.example.com/mcp' });
    expect(unknown.isError).toBe(true);
    expect(unknown.structuredContent.adcp_error).toMatchObject({ code: 'UNSUPPORTED_FEATURE', field: 'agent_url' });
    const local = await call({ task: 'get_products', params: {}, agent_url: 'http://127.0.0.1:9/mcp' });
    expect(local.isError).toBe(true);
    expect(local.structuredContent.adcp_error.field).toBe('agent_url');
  });
});
