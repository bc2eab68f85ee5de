import { v7 as uuidv7 } from 'uuid';

/** Time-ordered ids (UUID v7) for events, so ids sort roughly by creation in every store. */
export function newEventId(): string {
  return uuidv7();
}
