import { currentEventVersions, upcasters, type Upcaster } from '../domain/event-versions';
import type { EventStore, NewEvent, StoredEvent } from './port';

/**
 * Event shape versions on the store: which version each type is at now, and how to bring an
 * older one up. Built once from the domain's registry; a gap in an upcaster chain (version 3
 * declared, no upcaster from 2) is refused here, when the gateway starts, not on the first old
 * event read.
 */
export class EventVersions {
  private readonly steps = new Map<string, Upcaster>();

  constructor(
    private readonly current: Readonly<Record<string, number>> = currentEventVersions,
    chain: readonly Upcaster[] = upcasters,
  ) {
    for (const u of chain) {
      const key = `${u.type}@${u.from}`;
      if (this.steps.has(key)) throw new Error(`two upcasters for ${u.type} from version ${u.from}`);
      if (!(u.from >= 1 && u.from < this.versionOf(u.type))) throw new Error(`upcaster for ${u.type} from version ${u.from}: the type is at version ${this.versionOf(u.type)}`);
      this.steps.set(key, u);
    }
    for (const [type, version] of Object.entries(current)) {
      if (!Number.isSafeInteger(version) || version < 1) throw new Error(`event ${type}: version must be a whole number ≥ 1, got ${version}`);
      for (let v = 1; v < version; v++) if (!this.steps.has(`${type}@${v}`)) throw new Error(`event ${type} is at version ${version} but has no upcaster from version ${v}`);
    }
  }

  versionOf(type: string): number {
    return this.current[type] ?? 1;
  }

  /** The version an event was stored at: its metadata's, or 1 for events written before versions were recorded. */
  static storedVersion(e: StoredEvent): number {
    const v = e.metadata.schemaVersion;
    return typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 ? v : 1;
  }

  /**
   * The event in its type's current shape, stamped with the current version; the same object when
   * it already is (or was written by a newer gateway than this one: left as it is, never guessed down).
   */
  upcast(e: StoredEvent): StoredEvent {
    const target = this.versionOf(e.type);
    let version = EventVersions.storedVersion(e);
    if (version >= target) return e;
    let data = e.data as Record<string, unknown>;
    for (; version < target; version++) data = this.steps.get(`${e.type}@${version}`)!.up(data);
    return { ...e, data, metadata: { ...e.metadata, schemaVersion: target } };
  }

  /** Stamps the current version on an event about to be appended, unless it carries one (a copied log keeps its own). */
  stamp(e: NewEvent): NewEvent {
    if (e.metadata?.schemaVersion !== undefined) return e;
    return { ...e, metadata: { ...e.metadata, schemaVersion: this.versionOf(e.type) } };
  }
}

/**
 * The store with event versions: appends record each event's version, and every read path
 * (readStream, readAll, subscribe) hands out the current shape. The adapters store what they are
 * given and know nothing of this; the composition root wraps whichever one it opened.
 */
export function withUpcasting(store: EventStore, versions: EventVersions = new EventVersions()): EventStore {
  const current = (events: StoredEvent[]) => events.map((e) => versions.upcast(e));
  return {
    kind: store.kind,
    append: (streamId, events, options) => store.append(streamId, events.map((e) => versions.stamp(e)), options),
    readStream: async (streamId, options) => current(await store.readStream(streamId, options)),
    readAll: async (options) => current(await store.readAll(options)),
    headPosition: () => store.headPosition(),
    subscribe: (handler, options) => store.subscribe((events) => handler(current(events)), options),
    close: () => store.close(),
  };
}
