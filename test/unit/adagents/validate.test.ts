import { validateAdagents } from '../../../src/domain/adagents/validate';

const agent = (extra: Record<string, unknown> = {}) => ({ url: 'https://sales.example/mcp', authorized_for: 'Display and video', authorization_type: 'property_tags', property_tags: ['all'], ...extra });
const file = (extra: Record<string, unknown> = {}) => ({ $schema: 'https://adcontextprotocol.org/schemas/v3/adagents.json', last_updated: '2026-11-23T10:00:00Z', authorized_agents: [agent()], ...extra });
const errorsOf = (doc: unknown) => validateAdagents(doc).errors.map((e) => [e.field, e.message]);
const warningsOf = (doc: unknown) => validateAdagents(doc).warnings.map((w) => [w.field, w.message]);

describe('adagents.json validator (reference §2.6 rule families)', () => {
  it('accepts a well-formed file with no errors and no warnings', () => {
    expect(validateAdagents(file())).toEqual({ valid: true, errors: [], warnings: [] });
  });

  it('structure: root, authorized_agents, $schema, last_updated', () => {
    expect(errorsOf([])).toEqual([['root', 'adagents.json must be a valid JSON object']]);
    expect(errorsOf({})).toEqual([['authorized_agents', 'authorized_agents field is required']]);
    expect(errorsOf({ authorized_agents: {} })).toEqual([['authorized_agents', 'authorized_agents must be an array']]);
    expect(errorsOf(file({ $schema: 3, last_updated: 5 }))).toEqual([
      ['$schema', '$schema must be a string'],
      ['last_updated', 'last_updated must be an ISO 8601 timestamp string'],
    ]);
    expect(warningsOf({ authorized_agents: [agent()] }).map(([f]) => f)).toEqual(['$schema', 'last_updated']);
    expect(warningsOf(file({ last_updated: '2026-11-23' }))).toEqual([['last_updated', 'last_updated should be in ISO 8601 format (YYYY-MM-DDTHH:mm:ssZ)']]);
    const w = validateAdagents({ authorized_agents: [agent()] }).warnings[0]!;
    expect(w.suggestion).toContain('$schema');
  });

  it('per agent: url, authorized_for, arrays, countries, delegation, dates, signing keys, authorization_type and its selector', () => {
    const bad = file({
      authorized_agents: [
        'x',
        { authorized_for: 'x', authorization_type: 'property_ids', property_ids: ['a'] },
        agent({ url: 'http://sales.example' }),
        agent({ url: 'not a url', authorized_for: 'y'.repeat(501) }),
        agent({ countries: ['us'], delegation_type: 'reseller', exclusive: 'yes', property_ids: 'a' }),
        agent({ effective_from: '2027-01-02T00:00:00Z', effective_until: '2027-01-01T00:00:00Z', signing_keys: [{}] }),
        agent({ authorization_type: undefined }),
        agent({ authorization_type: 'everything' }),
        agent({ authorization_type: 'inline_properties' }),
      ],
    });
    expect(errorsOf(bad)).toEqual([
      ['authorized_agents[0]', 'Each agent must be an object'],
      ['authorized_agents[1].url', 'url field is required'],
      ['authorized_agents[2].url', 'Agent URL must use HTTPS'],
      ['authorized_agents[3].url', 'url must be a valid URL'],
      ['authorized_agents[3].authorized_for', 'authorized_for must be 500 characters or less'],
      ['authorized_agents[4].property_ids', 'property_ids must be an array'],
      ['authorized_agents[4].countries[0]', 'countries entries must be ISO 3166-1 alpha-2 codes'],
      ['authorized_agents[4].delegation_type', 'delegation_type must be one of: direct, delegated, ad_network'],
      ['authorized_agents[4].exclusive', 'exclusive must be a boolean'],
      ['authorized_agents[5].effective_until', 'effective_until must be later than or equal to effective_from'],
      ['authorized_agents[5].signing_keys[0].kid', 'signing key kid is required'],
      ['authorized_agents[5].signing_keys[0].kty', 'signing key kty is required'],
      ['authorized_agents[6].authorization_type', 'missing required field `authorization_type` (one of `property_ids`, `property_tags`, `inline_properties`, `publisher_properties`, `signal_ids`, `signal_tags`)'],
      ['authorized_agents[7].authorization_type', 'authorization_type must be one of: property_ids, property_tags, inline_properties, publisher_properties, signal_ids, signal_tags'],
      ['authorized_agents[8].properties', 'authorization_type is "inline_properties" but `properties` is missing or empty'],
    ]);
  });

  it('signals, catalog entries and cross-references', () => {
    const doc = file({
      signals: [
        { id: 'a b', name: 1, value_type: 'text' },
        { id: 'ok', name: 'OK', value_type: 'numeric', range: { min: 5, max: 1 }, category: 'weird', tags: ['Bad'] },
        { id: 'ok', name: 'Dup', value_type: 'categorical' },
      ],
      formats: [{ capability_id: 'x' }, { format_option_id: 'f1' }, { format_option_id: 'f1' }],
      placements: [{ placement_id: 'p', name: 'P', property_ids: ['nope'], format_options: [{ format_option_id: 'zzz' }], preview_provider: { routes: [{ format_option_id: 'f9' }] } }, {}],
      authorized_agents: [agent(), agent({ authorization_type: 'signal_ids', signal_ids: ['missing'] })],
    });
    const v = validateAdagents(doc);
    expect(v.valid).toBe(false);
    expect(v.errors.map((e) => e.field)).toEqual(
      expect.arrayContaining(['signals[0].id', 'signals[0].name', 'signals[0].value_type', 'signals[1].range', 'signals[1].tags[0]', 'formats[0].capability_id', 'placements[1].placement_id', 'placements[1]', 'placements[0].format_options[0].format_option_id', 'placements[0].preview_provider.routes[0].format_option_id']),
    );
    expect(v.warnings.map((w) => [w.field, w.message])).toEqual(
      expect.arrayContaining([
        ['authorized_agents[1].url', 'Duplicate agent URL found'],
        ['signals[2].id', 'Duplicate signal ID: ok'],
        ['signals[1].category', 'Signal category "weird" is not a standard category'],
        ['signals[2].allowed_values', 'Categorical signal should define allowed_values'],
        ['formats[0].format_option_id', 'Publisher catalog format is missing format_option_id'],
        ['formats[2].format_option_id', 'Duplicate format_option_id: f1'],
        ['placements[0].property_ids', 'Placement property_id "nope" not found in properties'],
        ['authorized_agents[1].signal_ids', 'Signal ID "missing" not found in signals catalog'],
      ]),
    );
    expect(warningsOf(file({ authorized_agents: [] }))).toEqual([['authorized_agents', 'No authorized agents and no catalog content']]);
  });
});
