// Child process for the SQLite two-process concurrency test: appends `count` events to one
// stream, each at the version it just read, and prints how many appends won.
import { SqliteEventStore } from '../../src/eventstore/sqlite';
import { ConcurrencyError } from '../../src/eventstore/port';

async function run(): Promise<void> {
  const [file, stream, countArg] = process.argv.slice(2);
  const store = new SqliteEventStore({ file });
  let wins = 0;
  for (let i = 0; i < Number(countArg); i++) {
    const version = (await store.readStream(stream)).length;
    try {
      await store.append(stream, [{ type: 'Raced', data: { pid: process.pid, i } }], { expectedVersion: version });
      wins++;
    } catch (err) {
      if (!(err instanceof ConcurrencyError)) throw err;
    }
  }
  await store.close();
  process.stdout.write(String(wins));
}

run().catch((err: unknown) => {
  process.stderr.write(String(err instanceof Error ? err.stack : err));
  process.exit(1);
});
