type Json = Record<string, any>;

let messageSeq = 0;

/**
 * One A2A `message/send` against a gateway, as @adcp/sdk's A2A client sends a skill call (one
 * DataPart `{skill, parameters}`, a Bearer key): the AdCP answer is the artifact's last DataPart,
 * an error when the artifact is named `error`. The caller checks the answer against the release
 * it expects.
 */
export async function a2aCall(gwUrl: string, key: string, skill: string, parameters: unknown): Promise<{ isError: boolean; body: Json }> {
  const res = await fetch(`${gwUrl}/a2a`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', role: 'user', messageId: `a2a-call-${++messageSeq}`, parts: [{ kind: 'data', data: { skill, parameters } }] } } }),
  });
  expect(res.status).toBe(200);
  const { result } = (await res.json()) as { result: Json };
  expect(result).toMatchObject({ kind: 'task' });
  const artifact = result.artifacts[0];
  return { isError: artifact.name === 'error', body: artifact.parts.filter((p: Json) => p.kind === 'data').at(-1).data as Json };
}
