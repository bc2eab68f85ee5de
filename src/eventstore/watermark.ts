import type { AppendResult, EventStore, NewEvent, ExpectedVersion, WatermarkedStore } from './port';

export function withAppendWatermark(store: EventStore): WatermarkedStore {
  let highest = 0;
  const append = async (streamId: string, events: readonly NewEvent[], options?: { expectedVersion?: ExpectedVersion }): Promise<AppendResult> => {
    const result = await store.append(streamId, events, options);
    if (result.position > highest) highest = result.position;
    return result;
  };
  return {
    kind: store.kind,
    append,
    appendedUpTo: () => highest,
    readStream: (streamId, options) => store.readStream(streamId, options),
    readAll: (options) => store.readAll(options),
    headPosition: () => store.headPosition(),
    subscribe: (handler, options) => store.subscribe(handler, options),
    close: () => store.close(),
  };
}
