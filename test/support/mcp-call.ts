import { validateAdcp3Response } from '../../src/wire/adcp3/schemas';

type Json = Record<string, any>;

export interface McpAnswer {
  isError: boolean;
  body: Json;
}

/**
 * One MCP `tools/call` against a gateway, as an AdCP buyer makes it (a stateless JSON-RPC POST with
 * a Bearer key). A success is checked against the tool's AdCP 3.0 response schema unless
 * `validate` is false (the sandbox controller has none; a loopback agent URL is not https; a suite
 * that validates every answer itself).
 */
export async function mcpCall(gwUrl: string, key: string, name: string, args: unknown, options: { validate?: boolean } = {}): Promise<McpAnswer> {
  const res = await fetch(`${gwUrl}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  });
  expect(res.status).toBe(200);
  const { result } = (await res.json()) as { result: { isError?: boolean; structuredContent: Json } };
  if (!result.isError && options.validate !== false && name !== 'comply_test_controller') {
    expect({ name, validation: validateAdcp3Response(name, result.structuredContent) }).toMatchObject({ name, validation: { valid: true } });
  }
  return { isError: result.isError ?? false, body: result.structuredContent };
}
