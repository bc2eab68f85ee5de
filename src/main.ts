import 'reflect-metadata';
import type { FastifyInstance } from 'fastify';
import { startApp, stopApp, type ComposedApp } from './app';
import type { Config } from './config';
import { buildServer } from './http/server';
import { createLogger } from './logger';

export interface RunningGateway {
  app: ComposedApp;
  server: FastifyInstance;
  url: string;
  stop(): Promise<void>;
}

/** The composition root: stores, bus, projections, HTTP. Returns once the server listens. */
export async function startGateway(config: Config): Promise<RunningGateway> {
  // Before the logger: its lines carry trace ids only when tracing is on as it is made.
  // Loaded only then: a gateway with tracing off never loads the SDK.
  const tracing = config.tracing.enabled ? (await import('./shared/tracing-sdk')).startTracing({ serviceName: config.tracing.serviceName }) : undefined;
  const log = createLogger(config.logLevel);
  const app = await startApp(config, log);
  const server = await buildServer(app);
  await server.listen({ host: config.host, port: config.port });
  const addr = server.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  app.oauth.bindOrigin(url);
  log.info({ url, store: app.store.kind, bus: app.bus.kind }, 'adcp-gateway listening');

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Drain HTTP first (Apollo's drain plugin waits for in-flight operations), then
      // consumers, then stores: nothing acknowledged is left half-written.
      const timer = setTimeout(() => {
        log.error('graceful shutdown timed out; exiting');
        process.exit(1);
      }, config.shutdownGraceMs + 5000);
      timer.unref();
      try {
        await server.close();
        await stopApp(app);
        await tracing?.shutdown(); // flushes the spans still batched
        log.info('adcp-gateway stopped');
      } finally {
        clearTimeout(timer);
      }
    })());
  return { app, server, url, stop };
}
