import { CheckpointMovedError, moveSharedCheckpoint, type ReadModelStore } from './port';

/**
 * The checkpoint that says "every side effect of the log up to here was done elsewhere": set by
 * `log import` / `log copy` to the head of the log they moved, whose webhooks, Kafka messages and
 * change-feed entries the source already made (what was still pending there is in the log and
 * carries on from the projections). Side-effect consumers start past it; projections ignore it.
 */
export const SIDE_EFFECTS_DONE = 'side-effects-done';

/** Records the side effects of the log up to `position` as done; never moves the mark back. */
export async function recordSideEffectsDone(readModels: ReadModelStore, position: number): Promise<number> {
  for (;;) {
    const at = (await readModels.getCheckpoint(SIDE_EFFECTS_DONE)).position;
    if (at >= position) return at;
    try {
      await readModels.applyBatch(SIDE_EFFECTS_DONE, at, position, []);
      return position;
    } catch (err) {
      if (!(err instanceof CheckpointMovedError)) throw err; // someone else moved it: look again
    }
  }
}

/**
 * Where a side-effect consumer (a bus group, the Kafka relay) resumes: its own checkpoint, or the
 * side-effects mark when that is further on, in which case its checkpoint is moved up to the mark
 * first, so what it acknowledges next moves on from there and a restart resumes there too.
 */
export async function sideEffectCheckpoint(readModels: ReadModelStore, name: string): Promise<number> {
  const [own, done] = await Promise.all([readModels.getCheckpoint(name), readModels.getCheckpoint(SIDE_EFFECTS_DONE)]);
  if (done.position <= own.position) return own.position;
  return moveSharedCheckpoint(readModels, name, own.position, done.position);
}
