import fc from 'fast-check';
import { buildSchema, OverlappingFieldsCanBeMergedRule, parse, validate } from 'graphql';
import { GraphqlDocuments } from '../../../src/graphql/documents';
import { FieldsCanMergeRule, MAX_FIELD_VISITS } from '../../../src/graphql/fields-can-merge';

/** A schema with what field merging cares about: objects, an interface, a union, leaves of several types, lists, non-null, arguments. */
const schema = buildSchema(`
  interface Pet { name(surname: Boolean): String, owner: Person }
  type Dog implements Pet { name(surname: Boolean): String, owner: Person, barks: Boolean, size: Int, friends: [Pet] }
  type Cat implements Pet { name(surname: Boolean): String, owner: Person, meows: Boolean, size: String, friends: [Pet!] }
  type Person { name: String, pets: [Pet], best: Pet, age: Int }
  union Animal = Dog | Cat
  type Query { pet(id: Int): Pet, animal: Animal, dog: Dog, person: Person, people: [Person] }
`);

describe('the linear field-merging rule agrees with graphql-js', () => {
  const verdict = (rule: typeof FieldsCanMergeRule, text: string) => validate(schema, parse(text), [rule]).length > 0;

  it('on hand-written conflicts and non-conflicts', () => {
    const cases = [
      '{ pet { name name } }',
      '{ pet { x: name x: owner { name } } }',
      '{ pet { name(surname: true) name(surname: false) } }',
      '{ pet { name(surname: true) name(surname: true) } }',
      '{ pet { ... on Dog { size } ... on Cat { size } } }',
      '{ pet { ... on Dog { x: size } ... on Cat { x: meows } } }',
      '{ pet { ... on Dog { x: barks } x: name } }',
      '{ pet { ... on Dog { friends { name } } ... on Cat { friends { name } } } }',
      '{ animal { ... on Dog { friends { n: name } } ... on Cat { friends { n: owner { name } } } } }',
      '{ dog { ...A ...B } } fragment A on Dog { x: name } fragment B on Dog { x: barks }',
      '{ person { best { ...P } best { owner { name } } } } fragment P on Pet { owner { x: name x: age } }',
      '{ person { best { owner { x: name } } best { owner { x: age } } } }',
      '{ people { name } people { age } }',
    ];
    for (const text of cases) expect([text, verdict(FieldsCanMergeRule, text)]).toEqual([text, verdict(OverlappingFieldsCanBeMergedRule, text)]);
  });

  it('on generated documents (fields, aliases, arguments, inline fragments and named fragments, nested)', () => {
    // Selections valid for each type, so that field merging is the only rule a document can break.
    const fields: Record<string, { leaves: string[]; objects: [string, string][]; on: string[] }> = {
      Pet: { leaves: ['name', 'name', 'name', 'name(surname: true)', '__typename'], objects: [['owner', 'Person']], on: ['Dog', 'Cat', 'Pet'] },
      Dog: { leaves: ['name', 'name', 'name', 'name(surname: false)', 'barks', 'size'], objects: [['owner', 'Person'], ['friends', 'Pet']], on: ['Dog', 'Pet'] },
      Cat: { leaves: ['name', 'meows', 'size'], objects: [['owner', 'Person'], ['friends', 'Pet']], on: ['Cat', 'Pet'] },
      Person: { leaves: ['name', 'age'], objects: [['pets', 'Pet'], ['best', 'Pet']], on: ['Person'] },
      Animal: { leaves: ['__typename'], objects: [], on: ['Dog', 'Cat'] },
    };
    const alias = fc.constantFrom('', '', '', '', '', '', 'x: ', 'y: ');
    const set = (type: string, depth: number): fc.Arbitrary<string> => {
      const f = fields[type]!;
      const options: fc.Arbitrary<string>[] = [fc.tuple(alias, fc.constantFrom(...f.leaves)).map(([a, l]) => a + l)];
      if (depth > 0 && f.objects.length) options.push(fc.tuple(alias, fc.constantFrom(...f.objects)).chain(([a, [name, of]]) => set(of, depth - 1).map((s) => `${a}${name} ${s}`)));
      if (depth > 0) options.push(fc.constantFrom(...f.on).chain((on) => set(on, depth - 1).map((s) => `... on ${on} ${s}`)));
      if (type !== 'Person') options.push(fc.constant(type === 'Cat' ? '...FP' : '...FP ...FD').map((s) => (type === 'Dog' || type === 'Pet' || type === 'Animal' ? s : '...FP')));
      return fc.array(fc.oneof(...options), { minLength: 1, maxLength: 4 }).map((s) => `{ ${s.join(' ')} }`);
    };
    const noSpreads = (s: string) => s.replace(/\.\.\.F[PD]/g, '__typename');
    const doc = fc
      .tuple(set('Pet', 3), set('Animal', 2), set('Pet', 2), set('Dog', 2))
      .map(([pet, animal, fp, fd]) => `{ pet ${pet} animal { ...FP ...FD ${animal.slice(1)} } fragment FP on Pet ${noSpreads(fp)} fragment FD on Dog ${noSpreads(fd)}`);
    let conflicts = 0;
    fc.assert(
      fc.property(doc, (text) => {
        // Only documents graphql-js finds otherwise valid: the rules assume known fields and types.
        const others = validate(schema, parse(text)).filter((e) => !/conflict because/.test(e.message));
        fc.pre(others.length === 0);
        const expected = verdict(OverlappingFieldsCanBeMergedRule, text);
        if (expected) conflicts++;
        expect(verdict(FieldsCanMergeRule, text)).toBe(expected);
      }),
      { numRuns: 500 },
    );
    // The generator makes both kinds.
    expect(conflicts).toBeGreaterThan(50);
    expect(conflicts).toBeLessThan(450);
  });

  it('checks a fragment chain spread twice at every link, and 2,000 repeated fields, reading each field once', () => {
    const chain = Array.from({ length: 40 }, (_, i) => `fragment F${i} on Query { person { name } ${i < 39 ? `...F${i + 1} ...F${i + 1}` : ''} }`).join(' ');
    expect(validate(schema, parse(`{ ...F0 } ${chain}`), [FieldsCanMergeRule])).toEqual([]);
    const repeated = `{ ${'person { name best { name } } '.repeat(2_000)}}`;
    expect(validate(schema, parse(repeated), [FieldsCanMergeRule])).toEqual([]);
  });

  it('refuses as too complex a document whose check would read more than its budget', () => {
    // Each alias is a distinct merged selection: nothing is shared, so every field is read.
    const wide = `{ ${Array.from({ length: MAX_FIELD_VISITS / 4 + 10 }, (_, i) => `a${i}: person { name age best { name } }`).join(' ')} }`;
    const errors = validate(schema, parse(wide), [FieldsCanMergeRule]);
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/too complex to validate/)]);
  });
});

describe('prepared documents', () => {
  it('parses and validates a text once, says why one cannot run, and gives Apollo the valid ones by hash', async () => {
    const documents = new GraphqlDocuments(schema);
    const ok = documents.prepare('{ person { name } }');
    expect(ok.valid).toBe(true);
    expect(documents.prepare('{ person { name } }')).toBe(ok);
    expect(documents.prepare('{ person {')).toMatchObject({ valid: false, code: 'GRAPHQL_PARSE_FAILED' });
    expect(documents.prepare('{ person { nope } }')).toMatchObject({ valid: false, code: 'GRAPHQL_VALIDATION_FAILED' });
    const store = documents.apolloDocumentStore();
    const hash = require('node:crypto').createHash('sha256').update('{ person { name } }').digest('hex') as string;
    expect(await store.get(`schemahash:${hash}`)).toBe(ok.valid ? ok.document : undefined);
  });

  it('holds at most the memory it is given: the oldest go, and Apollo no longer finds them', async () => {
    const documents = new GraphqlDocuments(schema, 90 * 100); // ~100 characters of documents
    const first = documents.prepare('{ person { name } }');
    for (let i = 0; i < 10; i++) documents.prepare(`{ p${i}: person { name } }`);
    expect(documents.prepare('{ person { name } }')).not.toBe(first);
    const store = documents.apolloDocumentStore();
    const hash = require('node:crypto').createHash('sha256').update('{ p0: person { name } }').digest('hex') as string;
    expect(await store.get(`x:${hash}`)).toBeUndefined();
  });
});
