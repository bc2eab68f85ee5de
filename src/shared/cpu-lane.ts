/** A promise that settles in the next turn of the event loop (after the I/O waiting in this one). */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** One request's way through a CpuLane. */
export interface LaneTicket {
  /**
   * Resolves when the next step may run: in a turn of its own, the first once the lane is this
   * request's. Rejects with a LaneRefusal when the lane's waiting list is full (at once, the first
   * step only) or when the request was abandoned (its signal aborted) before the step could run.
   */
  step(): Promise<void>;
  /** Hands the lane on (a no-op when no step was taken); call it once, when the steps are done. */
  done(): void;
}

/** Why a ticket's step will not run: the lane's waiting list is full, or its request was abandoned. */
export class LaneRefusal extends Error {
  constructor(readonly reason: 'full' | 'abandoned') {
    super(reason === 'full' ? 'the lane has as many requests waiting as it may hold' : 'the request was abandoned before its turn');
    this.name = 'LaneRefusal';
  }
}

/**
 * Work that holds the CPU for milliseconds at a time (a 1 MB webhook body's JSON checks), one
 * request at a time, each step in a turn of the event loop of its own, and after each step the
 * lane rests as long as the step took. Node runs a callback to its end: four such requests
 * finishing in one turn would make a /healthz arriving then wait for all four; in the lane it
 * waits for one step at most, however many large bodies arrive at once, and steps take at most
 * half of the loop's time, whatever their senders keep sending. A request holds the lane only
 * between its first step and its last, never across a wait on the network.
 *
 * At most `maxWaiting` requests wait for it: one more is refused at once (its sender is told to
 * come back) rather than queued for longer than its answer is worth. A request whose signal aborts
 * (it was answered already: its time ran out, its client went away) leaves the waiting list, and
 * its next step never runs: the work of a request nobody waits for is not done.
 */
export class CpuLane {
  private busy = false;
  /** Requests waiting for the lane, each resumed when the lane is its. */
  private readonly waiting: { resume: () => void }[] = [];
  /** When (performance.now()) the lane may run its next step. */
  private restUntil = 0;

  constructor(private readonly maxWaiting = Infinity) {}

  /** Requests waiting for their first step (not the one holding the lane). */
  get waitingCount(): number {
    return this.waiting.length;
  }

  ticket(signal?: AbortSignal): LaneTicket {
    let holding = false;
    let began = 0;
    const worked = () => {
      const now = performance.now();
      this.restUntil = now + (now - began);
    };
    return {
      step: async () => {
        if (signal?.aborted) throw new LaneRefusal('abandoned');
        if (holding) {
          worked();
          await this.turn();
          // Abandoned during the rest: the lane goes to the next request at done().
          if (signal?.aborted) throw new LaneRefusal('abandoned');
        } else {
          await this.enter(signal);
          holding = true;
          // Abandoned after the lane became its (during the turn before its first step).
          if (signal?.aborted) throw new LaneRefusal('abandoned');
        }
        began = performance.now();
      },
      done: () => {
        if (!holding) return;
        holding = false;
        worked();
        this.leave();
      },
    };
  }

  /**
   * A turn of the loop first, then the rest that is left. Not a bare setTimeout: a timer set
   * inside a long callback counts from the loop's cached clock, from before the callback ran, so
   * it can be due in this same timers phase and run before the check phase (and the I/O) had
   * its turn.
   */
  private async turn(): Promise<void> {
    await nextTurn();
    const rest = this.restUntil - performance.now();
    if (rest >= 1) await new Promise((resolve) => setTimeout(resolve, rest));
  }

  private enter(signal: AbortSignal | undefined): Promise<void> {
    if (!this.busy) {
      this.busy = true;
      return this.turn();
    }
    if (this.waiting.length >= this.maxWaiting) return Promise.reject(new LaneRefusal('full'));
    return new Promise((resolve, reject) => {
      const waiter: { resume: () => void } = { resume: () => resolve() };
      this.waiting.push(waiter);
      if (!signal) return;
      const abandon = () => {
        const at = this.waiting.indexOf(waiter);
        if (at < 0) return; // already the lane's: its step sees the signal
        this.waiting.splice(at, 1);
        reject(new LaneRefusal('abandoned'));
      };
      signal.addEventListener('abort', abandon, { once: true });
      waiter.resume = () => {
        signal.removeEventListener('abort', abandon);
        resolve();
      };
    });
  }

  private leave(): void {
    const next = this.waiting.shift();
    if (!next) {
      this.busy = false;
      return;
    }
    // The lane is next's from here; should it be abandoned during the turn, its step refuses and
    // its done() hands the lane on.
    void this.turn().then(next.resume);
  }
}
