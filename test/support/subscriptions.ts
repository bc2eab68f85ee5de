import { createClient as createWsClient } from 'graphql-ws';
import { createClient as createSseClient } from 'graphql-sse';
import WebSocket from 'ws';

/** What one subscription has received so far, and how to end it. */
export interface Feed<T> {
  items: T[];
  errors: unknown[];
  stop(): void;
}

export type Subscribe = <T>(key: string, query: string, variables?: Record<string, unknown>) => Feed<T>;

/** graphql-ws over a WebSocket at /graphql, credentials in connection_init (as a browser sends them). */
export function overWebSocket(url: string): Subscribe {
  return <T>(key: string, query: string, variables?: Record<string, unknown>) => {
    const client = createWsClient({ url: `${url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${key}` }, retryAttempts: 0, lazy: true });
    return collect<T>((sink) => client.subscribe({ query, variables }, sink), () => void client.dispose());
  };
}

/** graphql-sse at /graphql/stream, one HTTP stream per subscription (distinct connections mode). */
export function overSse(url: string): Subscribe {
  return <T>(key: string, query: string, variables?: Record<string, unknown>) => {
    const client = createSseClient({ url: `${url}/graphql/stream`, headers: { authorization: `Bearer ${key}` }, retryAttempts: 0 });
    return collect<T>((sink) => client.subscribe({ query, variables }, sink), () => client.dispose());
  };
}

export function collect<T>(start: (sink: { next: (r: { data?: unknown; errors?: unknown }) => void; error: (e: unknown) => void; complete: () => void }) => () => void, dispose: () => void): Feed<T> {
  const feed: Feed<T> = { items: [], errors: [], stop: () => undefined };
  const unsubscribe = start({
    next: (r) => {
      if (r.errors) feed.errors.push(r.errors);
      const data = r.data as Record<string, T> | undefined;
      if (data) feed.items.push(Object.values(data)[0]!);
    },
    error: (e) => feed.errors.push(e),
    complete: () => undefined,
  });
  feed.stop = () => {
    unsubscribe();
    dispose();
  };
  return feed;
}
