import pino, { type Logger } from 'pino';

/** JSON logs on stderr, so stdout stays free for CLI output (keys, JSON lines). */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'adcp-gateway' } }, pino.destination(2));
}
