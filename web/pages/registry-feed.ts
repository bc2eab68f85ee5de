import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { gql, subscribe } from '../api.js';
import { Failure, Loading } from '../ui.js';
import { failureOf, when } from './registry-ui.js';

interface Entry {
  position: number;
  eventId: string;
  eventType: string;
  entityType: string;
  entityId: string;
  actor: string;
  createdAt: string;
}

const ENTRY = 'position eventId eventType entityType entityId actor createdAt';
const SHOWN = 50;

/**
 * The registry change feed, live: the newest entries from the query, then each new one as the
 * subscription delivers it, resumed after the page's last position so none falls in between.
 */
export function ChangeFeed() {
  const [entries, setEntries] = useState<Entry[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [live, setLive] = useState(false);
  useEffect(() => {
    let stop: (() => void) | undefined;
    let current = true;
    gql<{ registryFeed: { entries: Entry[]; lastPosition: number | null } }>(`query { registryFeed(newest: true, limit: ${SHOWN}) { entries { ${ENTRY} } lastPosition } }`).then(
      ({ registryFeed }) => {
        if (!current) return;
        setEntries([...registryFeed.entries].reverse());
        stop = subscribe<Entry>(
          `subscription($a: Float) { registryFeed(after: $a) { ${ENTRY} } }`,
          registryFeed.lastPosition === null ? {} : { a: registryFeed.lastPosition },
          (entry) => {
            setLive(true);
            setEntries((list) => (list?.some((e) => e.eventId === entry.eventId) ? list : [entry, ...(list ?? [])].slice(0, SHOWN)));
          },
          (message) => setError(message),
        );
        setLive(true);
      },
      (err: unknown) => current && setError(failureOf(err).message),
    );
    return () => {
      current = false;
      stop?.();
    };
  }, []);
  return html`<section aria-labelledby="feed-title">
    <h2 id="feed-title">Change feed</h2>
    <p class="muted" role="status">${error ? 'Not live.' : live ? `Live: new entries appear at the top (the newest ${SHOWN} are shown).` : 'Connecting…'}</p>
    ${error ? html`<${Failure} error=${error} />` : null}
    ${!entries && !error ? html`<${Loading} />` : null}
    ${entries && entries.length === 0 ? html`<p class="muted">No entries yet: revalidations, brand registrations and crawls appear here.</p>` : null}
    ${entries && entries.length > 0
      ? html`<ul class="feed" aria-label="Feed entries, newest first">
          ${entries.map(
            (e) => html`<li data-entry=${e.eventId} data-entity=${e.entityId}>
              <strong>${e.eventType}</strong> <code>${e.entityId}</code>
              <br /><span class="muted">${when(e.createdAt)} · by ${e.actor}</span>
            </li>`,
          )}
        </ul>`
      : null}
  </section>`;
}
