import type { AppendResult, EventStore, NewEvent, ExpectedVersion, WatermarkedStore } from './port';

export function withAppendWatermark(store: EventStore): WatermarkedStore {
  let highest = 0;
  // Event types are few (the domain's), so this map stays small.
  const byType = new Map<string, number>();
  const append = async (streamId: string, events: readonly NewEvent[], options?: { expectedVersion?: ExpectedVersion }): Promise<AppendResult> => {
    const result = await store.append(streamId, events, options);
    if (result.position > highest) highest = result.position;
    // The append's positions end at result.position; each type is marked at the last one (a wait
    // up to it covers every event of the append).
    for (const e of events) if ((byType.get(e.type) ?? 0) < result.position) byType.set(e.type, result.position);
    return result;
  };
  return {
    kind: store.kind,
    append,
    appendedUpTo: () => highest,
    appendedTypes: () => byType,
    readStream: (streamId, options) => store.readStream(streamId, options),
    readAll: (options) => store.readAll(options),
    headPosition: () => store.headPosition(),
    subscribe: (handler, options) => store.subscribe(handler, options),
    close: () => store.close(),
  };
}
