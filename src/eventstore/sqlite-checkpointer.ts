import { Worker } from 'node:worker_threads';

/**
 * WAL checkpoints off the event loop. A checkpoint copies the WAL's pages into the database file
 * and fsyncs both; run by the writing connection (SQLite's auto-checkpoint, inside the commit
 * that crosses `wal_autocheckpoint`), it stalled every request for 30–50 ms once per ~40 MB of
 * WAL here, most of it waiting on fsync. This worker thread opens its own connection to the file
 * and runs PASSIVE checkpoints every `intervalMs`: a PASSIVE checkpoint never waits for readers
 * or writers, so the event loop's connection keeps committing while pages are copied and synced.
 *
 * The writing connection keeps its auto-checkpoint as the backstop that bounds the WAL: under
 * continuous writes a background checkpoint rarely catches the WAL's very end, and the WAL only
 * starts over once it has. When the backstop fires, the worker has already copied and synced
 * nearly everything, so what is left for the event loop is a short copy and two small fsyncs.
 * Durability does not change: commits are as durable as the WAL was before (SQLite's
 * `synchronous` setting, which this connection shares); a checkpoint only moves committed pages.
 */
export interface BackgroundCheckpoints {
  /** Stops the worker and closes its connection (before the last connection to the file closes, so that one may remove the WAL). */
  stop(): Promise<void>;
}

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('synchronous = ' + workerData.synchronous);
// This connection never writes pages of its own, and the copy needs no page cache.
db.pragma('cache_size = -1024');
db.pragma('wal_autocheckpoint = 0');
let failures = 0;
const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
    failures = 0;
  } catch (err) {
    // The writing connection's auto-checkpoint still bounds the WAL; say so once, not every tick.
    if (failures++ === 0) parentPort.postMessage({ error: String(err && err.message || err) });
  }
}, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});`;

export function startBackgroundCheckpoints(
  file: string,
  options: { synchronous: 'FULL' | 'NORMAL'; intervalMs?: number; onError?: (message: string) => void },
): BackgroundCheckpoints {
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: { driver: require.resolve('better-sqlite3'), file, synchronous: options.synchronous, intervalMs: options.intervalMs ?? 100 },
  });
  // A process that is done must not stay up for its checkpointer.
  worker.unref();
  worker.on('message', (m: { error?: string }) => {
    if (m.error) options.onError?.(m.error);
  });
  // A worker that fails (it could not open the file) leaves the auto-checkpoint doing the work.
  worker.on('error', (err) => options.onError?.(err.message));
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  let stopping: Promise<void> | undefined;
  return {
    stop() {
      stopping ??= (async () => {
        // Held until it has exited: a shutdown awaiting this must not see the process end first.
        worker.ref();
        worker.postMessage('stop');
        // Bounded: a checkpoint in progress finishes first; one stuck on a sick disk is cut short.
        const timeout = new Promise<'late'>((resolve) => setTimeout(resolve, 5000, 'late').unref());
        if ((await Promise.race([exited, timeout])) === 'late') await worker.terminate();
      })();
      return stopping;
    },
  };
}
