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
 * request at a time, each step in a turn of the event loop of its own. Node runs a callback to
 * its end: four such requests finishing in one turn would make a /healthz arriving then wait for
 * all four; in the lane it waits for one step at most, however many large bodies arrive at once.
 * A request holds the lane only between its steps' first and last, never across a network wait.
 */
export class CpuLane {
  private busy = false;
  private readonly waiting: (() => void)[] = [];

  ticket(): LaneTicket {
    let holding = false;
    return {
      step: async () => {
        if (holding) return nextTurn();
        await this.enter();
        holding = true;
      },
      done: () => {
        if (!holding) return;
        holding = false;
        this.leave();
      },
    };
  }

  private enter(): Promise<void> {
    if (!this.busy) {
      this.busy = true;
      return nextTurn();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private leave(): void {
    const next = this.waiting.shift();
    if (next) setImmediate(next);
    else this.busy = false;
  }
}
