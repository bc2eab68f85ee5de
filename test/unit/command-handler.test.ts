import { handleCommand } from '../../src/application/command-handler';
import { apiKeyDecider, apiKeyStream } from '../../src/domain/api-key/api-key';
import { MemoryEventStore } from '../../src/eventstore/memory';
import { ConcurrencyError } from '../../src/eventstore/port';
import { AppError } from '../../src/shared/errors';

const now = '2026-11-23T10:00:00.000Z';
const ctx = { now, principal: 'test', correlationId: 'c-1' };
const issue = { type: 'IssueApiKey' as const, keyId: 'k1', org: 'acme', role: 'buyer' as const, prefix: 'abcdefgh', salt: 's', hash: 'h', now };
const revoke = { type: 'RevokeApiKey' as const, keyId: 'k1', now };

describe('handleCommand', () => {
  it('appends the decided events with the context as metadata', async () => {
    const store = new MemoryEventStore();
    const { result } = await handleCommand(store, apiKeyStream('k1'), apiKeyDecider, issue, ctx);
    expect(result.nextVersion).toBe(1);
    const [e] = await store.readStream(apiKeyStream('k1'));
    expect(e).toMatchObject({ type: 'ApiKeyIssued', metadata: { time: now, principal: 'test', correlationId: 'c-1' } });
  });

  it('re-decides on fresh state after a conflict: two racing revokes give one event and one INVALID_STATE', async () => {
    const store = new MemoryEventStore();
    await handleCommand(store, apiKeyStream('k1'), apiKeyDecider, issue, ctx);
    const results = await Promise.allSettled([
      handleCommand(store, apiKeyStream('k1'), apiKeyDecider, revoke, ctx),
      handleCommand(store, apiKeyStream('k1'), apiKeyDecider, revoke, ctx),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(rejected.reason).toBeInstanceOf(AppError);
    expect((rejected.reason as AppError).code).toBe('INVALID_STATE');
    expect((await store.readStream(apiKeyStream('k1'))).map((e) => e.type)).toEqual(['ApiKeyIssued', 'ApiKeyRevoked']);
  });

  it('surfaces CONFLICT, appending nothing, once retries are exhausted', async () => {
    const store = new MemoryEventStore();
    const results = await Promise.allSettled([
      handleCommand(store, apiKeyStream('k1'), apiKeyDecider, issue, ctx, 0),
      handleCommand(store, apiKeyStream('k1'), apiKeyDecider, { ...issue, org: 'other' }, ctx, 0),
    ]);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(rejected.reason).toBeInstanceOf(ConcurrencyError);
    expect((rejected.reason as AppError).code).toBe('CONFLICT');
    expect(await store.readStream(apiKeyStream('k1'))).toHaveLength(1);
  });
});
