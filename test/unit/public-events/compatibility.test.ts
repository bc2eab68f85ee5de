import { breakingChanges } from '../../../src/public-events/compatibility';
import { payloadSchema } from '../../../src/public-events/documents';

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

describe('breakingChanges: what a published public event schema may not become', () => {
  const published = payloadSchema('media_buy.status_changed') as Record<string, any>;

  it('finds nothing between a schema and itself, or when only descriptions change', () => {
    expect(breakingChanges(published, clone(published))).toEqual([]);
    const reworded = clone(published);
    reworded.description = 'Reworded.';
    reworded.properties.status.description = 'The new status.';
    expect(breakingChanges(published, reworded)).toEqual([]);
  });

  it('refuses a removed field', () => {
    const c = clone(published);
    delete c.properties.reason;
    expect(breakingChanges(published, c)).toEqual(['reason: removed']);
  });

  it('refuses a retyped field, a changed enum included', () => {
    const c = clone(published);
    c.properties.media_buy_id = { type: 'integer' };
    c.properties.status.enum = [...c.properties.status.enum, 'archived'];
    expect(breakingChanges(published, c)).toEqual(['media_buy_id: retyped', 'status: retyped']);
  });

  it('refuses a newly required field, one no longer required, and a new field (published objects refuse unknown ones)', () => {
    const c = clone(published);
    c.required = [...c.required.filter((r: string) => r !== 'changed_at'), 'reason'];
    c.properties.note = { type: 'string' };
    expect(breakingChanges(published, c).sort()).toEqual(['changed_at: no longer required', 'note: added (published objects refuse unknown fields)', 'reason: newly required'].sort());
  });

  it('looks inside nested objects and arrays', () => {
    const pub = payloadSchema('media_buy.created') as Record<string, any>;
    const c = clone(pub);
    delete c.properties.packages.items.properties.budget;
    expect(breakingChanges(pub, c)).toEqual(['packages[].budget: removed']);
  });
});
