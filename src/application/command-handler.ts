import type { Decider } from '../domain/decider';
import { inSpan } from '../shared/tracing';
import { ConcurrencyError, type AppendResult, type EventMetadata, type EventStore, type NewEvent, type StoredEvent } from '../eventstore/port';

export interface CommandContext {
  principal?: string;
  correlationId?: string;
  /**
   * The idempotency attempt this command runs under (see withIdempotency), kept in its events'
   * metadata so a retry can tell that an earlier attempt already wrote them.
   */
  idempotency?: string;
  /** Decision time, passed into the command by the caller (never read inside a decider). */
  now: string;
}

function metadataOf(ctx: CommandContext): Partial<EventMetadata> {
  return { time: ctx.now, principal: ctx.principal, correlationId: ctx.correlationId, ...(ctx.idempotency ? { idempotency: ctx.idempotency } : {}) };
}

/** Folds a stream into its decider's state (and returns the history it read). */
export async function loadState<E extends { type: string }, S>(
  store: EventStore,
  streamId: string,
  decider: Decider<unknown, E, S> | Decider<never, E, S>,
): Promise<{ state: S; history: StoredEvent[] }> {
  const history = await store.readStream(streamId);
  let state = decider.initialState();
  for (const e of history) state = decider.evolve(state, e as unknown as E);
  return { state, history };
}

/** The span of one command: named after the command's type, with the stream it decides on. */
const commandSpan = <T>(command: unknown, streamId: string, fn: () => Promise<T>): Promise<T> => {
  const type = (command as { type?: unknown } | null)?.type;
  return inSpan(`command ${typeof type === 'string' ? type : 'unknown'}`, { attributes: { 'adcp.stream_id': streamId } }, fn);
};

/**
 * Load the stream, fold it, decide, append at the version we read. On a concurrency conflict the
 * command is re-decided against the fresh state (deciders are pure, so this is safe) up to
 * `retries` times; after that the ConcurrencyError surfaces as CONFLICT.
 */
export async function handleCommand<C, E extends { type: string; data: unknown }, S>(
  store: EventStore,
  streamId: string,
  decider: Decider<C, E, S>,
  command: C,
  ctx: CommandContext,
  retries = 3,
): Promise<{ events: readonly E[]; state: S; result: AppendResult }> {
  return commandSpan(command, streamId, () => decideAndAppend(store, streamId, decider, command, ctx, retries));
}

async function decideAndAppend<C, E extends { type: string; data: unknown }, S>(
  store: EventStore,
  streamId: string,
  decider: Decider<C, E, S>,
  command: C,
  ctx: CommandContext,
  retries: number,
): Promise<{ events: readonly E[]; state: S; result: AppendResult }> {
  for (let attempt = 0; ; attempt++) {
    const loaded = await loadState(store, streamId, decider);
    const { history } = loaded;
    let state = loaded.state;
    const events = decider.decide(command, state);
    const metadata = metadataOf(ctx);
    try {
      const result = await store.append(
        streamId,
        events.map((e) => ({ type: e.type, data: e.data, metadata })),
        { expectedVersion: history.length },
      );
      for (const e of events) state = decider.evolve(state, e);
      return { events, state, result };
    } catch (err) {
      if (err instanceof ConcurrencyError && attempt < retries) continue;
      throw err;
    }
  }
}

/**
 * For a command that starts a stream: decide on the initial state and append at `no_stream`,
 * skipping the read (a stream that already exists surfaces as a ConcurrencyError).
 */
export async function startStream<C, E extends { type: string; data: unknown }, S>(
  store: EventStore,
  streamId: string,
  decider: Decider<C, E, S>,
  command: C,
  ctx: CommandContext,
): Promise<{ events: readonly E[]; result: AppendResult }> {
  return commandSpan(command, streamId, async () => {
    const events = decider.decide(command, decider.initialState());
    const metadata = metadataOf(ctx);
    const result = await store.append(streamId, events.map((e) => ({ type: e.type, data: e.data, metadata })), { expectedVersion: 'no_stream' });
    return { events, result };
  });
}

/**
 * Appends `events` as the first of a stream named after what they record, so doing the same
 * thing again (a redelivered event, a retried request, a second instance) records nothing.
 * Returns false when the stream already existed.
 */
export async function appendOnce(store: EventStore, streamId: string, events: readonly NewEvent[]): Promise<boolean> {
  try {
    await store.append(streamId, events, { expectedVersion: 'no_stream' });
    return true;
  } catch (err) {
    if (err instanceof ConcurrencyError) return false;
    throw err;
  }
}
