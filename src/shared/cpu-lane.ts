/** A promise that settles in the next turn of the event loop (after the I/O waiting in this one). */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** One request's way through a CpuLane. */
export interface LaneTicket {
  /** Resolves when the next step may run: in a turn of its own, the first once the lane is this request's. */
  step(): Promise<void>;
  /** Hands the lane on (a no-op when no step was taken); call it once, when the steps are done. */
  done(): void;
}

/**
 * Work that holds the CPU for milliseconds at a time (a 1 MB webhook body's JSON checks), one
 * request at a time, each step in a turn of the event loop of its own, and after each step the
 * lane rests as long as the step took. Node runs a callback to its end: four such requests
 * finishing in one turn would make a /healthz arriving then wait for all four; in the lane it
 * waits for one step at most, however many large bodies arrive at once, and steps take at most
 * half of the loop's time, whatever their senders keep sending. A request holds the lane only
 * between its first step and its last, never across a wait on the network.
 */
export class CpuLane {
  private busy = false;
  private readonly waiting: (() => void)[] = [];
  /** When (performance.now()) the lane may run its next step. */
  private restUntil = 0;

  ticket(): LaneTicket {
    let holding = false;
    let began = 0;
    const worked = () => {
      const now = performance.now();
      this.restUntil = now + (now - began);
    };
    return {
      step: async () => {
        if (holding) {
          worked();
          await this.turn();
        } else {
          await this.enter();
          holding = true;
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

  private enter(): Promise<void> {
    if (!this.busy) {
      this.busy = true;
      return this.turn();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private leave(): void {
    const next = this.waiting.shift();
    if (next) void this.turn().then(next);
    else this.busy = false;
  }
}
