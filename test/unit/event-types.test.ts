import { allProjections } from '../../projections';
import { KNOWN_EVENT_TYPES, isKnownEventType } from '../../src/domain/event-types';
import { PUBLISHED_INTERNAL_TYPES } from '../../src/public-events/mapping';

/**
 * The registry `log import` and `log copy` check event types against: every type a projection
 * handles or the public mapping publishes is in it (a type missing here would make a good log
 * unmovable). The domain's own types are checked by the compiler (src/domain/event-types.ts).
 */
describe('the event-type registry', () => {
  it('holds every type a projection reads and every type the public mapping publishes', () => {
    const read = allProjections.flatMap((p) => (p.handles === '*' ? [] : [...p.handles]));
    expect([...new Set([...read, ...PUBLISHED_INTERNAL_TYPES])].filter((t) => !isKnownEventType(t))).toEqual([]);
  });

  it('does not take a command or a near miss for an event', () => {
    for (const t of ['CreateMediaBuy', 'MediaBuyCreatd', 'mediabuycreated', '', '__proto__', 'constructor']) expect(isKnownEventType(t)).toBe(false);
    expect(KNOWN_EVENT_TYPES.length).toBeGreaterThan(50);
  });
});
