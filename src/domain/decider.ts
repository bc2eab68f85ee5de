/**
 * A pure aggregate: `decide` turns a command and the current state into new events (or throws an
 * AppError); `evolve` folds one event into the state. No I/O, clock or randomness inside: time,
 * ids and the principal arrive in the command.
 */
export interface Decider<Command, Event extends { type: string }, State> {
  initialState(): State;
  decide(command: Command, state: State): readonly Event[];
  evolve(state: State, event: Event): State;
}

/** Closes a switch over a union: a new variant becomes a compile error here. */
export function assertNever(value: never): never {
  throw new Error(`unhandled variant: ${JSON.stringify(value)}`);
}
