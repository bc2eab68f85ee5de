import type { EventStore, StoredEvent } from '../eventstore/port';
import { CLOUDEVENTS_SOURCE } from './cloudevents';
import { toPublicEvent, type Attribution, type PublicEvent } from './mapping';
import { PUBLIC_EVENT_TYPES, cloudEventType, type PublicEventName } from './types';

/** Where `adcp-gateway events tail` starts and whether it waits for more. */
export interface TailOptions {
  /** The first log position to print (the `ce_position` / `position` a previous tail printed, plus one). */
  readonly from: number;
  /** Keep printing new events until `signal` aborts; otherwise stop at the head. */
  readonly follow: boolean;
  readonly signal?: AbortSignal;
}

/** A public event in CloudEvents' JSON format (structured mode): one line of the tail. */
export function structuredCloudEvent(e: PublicEvent): Record<string, unknown> {
  return {
    specversion: '1.0',
    id: e.id,
    source: CLOUDEVENTS_SOURCE,
    type: cloudEventType(e.name),
    time: e.time,
    subject: e.subject,
    tenant: e.tenant,
    position: e.position,
    datacontenttype: 'application/json',
    data: e.data,
  };
}

/**
 * Prints the public event stream from the log, as the relay maps it, each event checked against
 * its public schema first: one that does not conform is reported through `problem`, not printed.
 * Resolves with the counts once at the head (or, following, once `signal` aborts).
 */
export async function tailPublicEvents(
  store: EventStore,
  attribution: Attribution,
  options: TailOptions,
  names: ReadonlySet<PublicEventName>,
  print: (line: string) => void,
  problem: (message: string) => void,
): Promise<{ printed: number; invalid: number }> {
  const counts = { printed: 0, invalid: 0 };
  const handle = async (events: readonly StoredEvent[]) => {
    for (const e of events) {
      const pub = await toPublicEvent(e, attribution, (reason) => {
        counts.invalid++;
        problem(reason);
      });
      if (!pub || !names.has(pub.name)) continue;
      const checked = PUBLIC_EVENT_TYPES[pub.name].data.safeParse(pub.data);
      if (!checked.success) {
        counts.invalid++;
        problem(`position ${e.position}: ${cloudEventType(pub.name)} does not match its schema: ${checked.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
        continue;
      }
      counts.printed++;
      print(JSON.stringify(structuredCloudEvent(pub)));
    }
  };
  if (!options.follow) {
    let from = options.from;
    for (;;) {
      const batch = await store.readAll({ fromPosition: from, limit: 1000 });
      if (batch.length === 0) return counts;
      await handle(batch);
      from = batch[batch.length - 1]!.position + 1;
    }
  }
  const sub = store.subscribe(handle, { fromPosition: options.from, batchSize: 1000, onError: (err) => problem(`reading the log: ${(err as Error).message}`) });
  await new Promise<void>((resolve) => {
    if (options.signal?.aborted) resolve();
    options.signal?.addEventListener('abort', () => resolve(), { once: true });
  });
  await sub.stop();
  return counts;
}
