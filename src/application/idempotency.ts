import { hash } from 'node:crypto';
import { ConcurrencyError, type EventStore } from '../eventstore/port';
import { AppError } from '../shared/errors';
import { canonicalJson as canonical } from '../shared/canonical-json';

const sha256 = (s: string) => hash('sha256', s, 'hex');

/**
 * AdCP's `idempotency_key`: the same key with the same payload replays the first response; with a
 * different payload it is IDEMPOTENCY_CONFLICT. Each (owner, key) is a stream holding one
 * recorded response, so the record is as durable as the events it answers for.
 *
 * The command's own events and that record are two appends: an attempt can fail between them (a
 * crash, the database refusing the second). So `run` gets an attempt marker for its events'
 * metadata (CommandContext.idempotency), and a command retried under the same key and payload
 * that finds its marker in the stream it writes answers from those events instead of acting twice.
 */
export async function withIdempotency<T extends Record<string, unknown>>(
  store: EventStore,
  owner: string,
  task: string,
  payload: Record<string, unknown>,
  run: (attempt: string | undefined) => Promise<T>,
): Promise<T> {
  const key = payload.idempotency_key;
  if (typeof key !== 'string') return run(undefined);
  const { idempotency_key: _k, context: _c, ...rest } = payload;
  const payloadHash = sha256(canonical({ task, rest }));
  const stream = `idempotency-${sha256(`${owner}\u0000${key}`).slice(0, 32)}`;

  const replay = async (): Promise<T | undefined> => {
    const [recorded] = await store.readStream(stream, { limit: 1 });
    if (!recorded) return undefined;
    const data = recorded.data as { payload_hash: string; response: T };
    if (data.payload_hash !== payloadHash) {
      throw new AppError('IDEMPOTENCY_CONFLICT', 'idempotency_key was already used with a different payload', 'idempotency_key');
    }
    return { ...data.response, replayed: true };
  };

  const earlier = await replay();
  if (earlier) return earlier;
  let response: T;
  try {
    response = await run(`${stream}:${payloadHash.slice(0, 32)}`);
  } catch (err) {
    // A concurrent request with the same key may have won: answer as it did.
    if (err instanceof AppError && err.code === 'CONFLICT') {
      const raced = await replay();
      if (raced) return raced;
    }
    throw err;
  }
  try {
    await store.append(stream, [{ type: 'IdempotentResponseRecorded', data: { task, payload_hash: payloadHash, response } }], { expectedVersion: 'no_stream' });
  } catch (err) {
    if (!(err instanceof ConcurrencyError)) throw err;
  }
  return response;
}
