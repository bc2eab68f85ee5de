import {
  getNamedType,
  GraphQLError,
  isCompositeType,
  isInterfaceType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  print,
  typeFromAST,
  type ASTVisitor,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLOutputType,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';

/**
 * The spec's "Field Selection Merging" rule (graphql-js's OverlappingFieldsCanBeMergedRule), in
 * time linear in the fields the document selects, after the algorithm of Xing ("Validating
 * overlapping fields in linear time", as Apollo's Rust compiler and graphql-java use it).
 *
 * graphql-js compares every pair of fields that share a response name, and every pair again in
 * their sub-selections: `a { b c { b } }` written 2,000 times (16 KB) takes it 2.3 s here, and a
 * leaf repeated 4,000 times under one field (priced at one point) about 1 s. Every relation the
 * rule checks is an equivalence (same shape of type; same field and arguments), so each field is
 * compared with the first of its group only, and the fields of a group are merged into one
 * selection that is checked once:
 *
 * - same response shape: all fields of one response name, wherever they sit, return types of the
 *   same shape (lists, non-null, the same leaf type); then the union of their sub-selections, again;
 * - same for common parents: fields of one response name that can apply to the same object (same
 *   object parent, or an abstract one) name the same field with the same arguments; then the
 *   union of each such group's sub-selections, again.
 *
 * Each distinct merged selection (by the selection sets it unites and their types) is checked once,
 * so a fragment spread many times is read once per distinct place. A document whose checks would
 * read more than MAX_FIELD_VISITS fields is refused as too complex rather than checked further.
 */
export const MAX_FIELD_VISITS = 200_000;

interface CollectedField {
  node: FieldNode;
  parent: GraphQLCompositeType;
  def: GraphQLField<unknown, unknown> | undefined;
}

/** A selection set with the type it selects on: the unit that merged selections unite. */
interface TypedSet {
  set: SelectionSetNode;
  type: GraphQLCompositeType;
}

/** Fields found in a merged selection, by response name, in document order. */
type FieldsByResponseName = Map<string, CollectedField[]>;

export const FieldsCanMergeRule: ValidationRule = (context: ValidationContext): ASTVisitor => {
  const schema = context.getSchema();
  const ids = new WeakMap<SelectionSetNode, number>();
  const collected = new Map<string, FieldsByResponseName>();
  const shapeChecked = new Set<string>();
  const parentsChecked = new Set<string>();
  const argumentKeys = new WeakMap<FieldNode, string>();
  let visits = 0;
  let exhausted = false;

  let nextId = 1;
  const idOf = (set: SelectionSetNode) => {
    let id = ids.get(set);
    if (id === undefined) ids.set(set, (id = nextId++));
    return id;
  };
  const keyOf = (sets: readonly TypedSet[]) => sets.map((s) => `${idOf(s.set)}:${s.type.name}`).join(',');

  /** The fields of several selection sets taken together, through their fragments (each fragment once). */
  function collect(sets: readonly TypedSet[], key: string): FieldsByResponseName | undefined {
    const known = collected.get(key);
    if (known) return known;
    const fields: FieldsByResponseName = new Map();
    const visited = new Set<string>();
    const walk = (set: SelectionSetNode, type: GraphQLCompositeType): boolean => {
      for (const s of set.selections) {
        if (++visits > MAX_FIELD_VISITS) return false;
        if (s.kind === Kind.FIELD) {
          const name = s.alias?.value ?? s.name.value;
          const def = isObjectType(type) || isInterfaceType(type) ? type.getFields()[s.name.value] : undefined;
          const entry: CollectedField = { node: s, parent: type, def };
          const group = fields.get(name);
          if (group) group.push(entry);
          else fields.set(name, [entry]);
        } else if (s.kind === Kind.INLINE_FRAGMENT) {
          const on = s.typeCondition ? typeFromAST(schema, s.typeCondition) : type;
          if (on && isCompositeType(on) && !walk(s.selectionSet, on)) return false;
        } else {
          const name = s.name.value;
          if (visited.has(name)) continue;
          visited.add(name);
          const fragment: FragmentDefinitionNode | null | undefined = context.getFragment(name);
          const on = fragment && typeFromAST(schema, fragment.typeCondition);
          if (fragment && on && isCompositeType(on) && !walk(fragment.selectionSet, on)) return false;
        }
      }
      return true;
    };
    for (const { set, type } of sets) {
      if (!walk(set, type)) {
        exhausted = true;
        return undefined;
      }
    }
    collected.set(key, fields);
    return fields;
  }

  /** The sub-selections of a group of fields, as one merged selection (each set once). */
  function subSelections(group: readonly CollectedField[]): TypedSet[] {
    const sets: TypedSet[] = [];
    const seen = new Set<string>();
    for (const f of group) {
      if (!f.node.selectionSet || !f.def) continue;
      const type = getNamedType(f.def.type);
      if (!isCompositeType(type)) continue;
      const key = `${idOf(f.node.selectionSet)}:${type.name}`;
      if (seen.has(key)) continue;
      seen.add(key);
      sets.push({ set: f.node.selectionSet, type });
    }
    return sets;
  }

  function report(path: readonly string[], reason: string, a: CollectedField, b: CollectedField): void {
    context.reportError(
      new GraphQLError(`Fields "${path.join('.')}" conflict because ${reason}. Use different aliases on the fields to fetch both if this was intentional.`, { nodes: [a.node, b.node] }),
    );
  }

  /** All fields of each response name return types of one shape; then their merged sub-selections. */
  function sameResponseShape(sets: readonly TypedSet[], path: readonly string[]): void {
    const key = keyOf(sets);
    if (exhausted || shapeChecked.has(key)) return;
    shapeChecked.add(key);
    const fields = collect(sets, key);
    if (!fields) return;
    for (const [name, group] of fields) {
      const first = group[0]!;
      let conflict = false;
      for (let i = 1; i < group.length && !conflict; i++) {
        const other = group[i]!;
        if (first.def && other.def && typesConflict(first.def.type, other.def.type)) {
          report([...path, name], `they return conflicting types "${String(first.def.type)}" and "${String(other.def.type)}"`, first, other);
          conflict = true;
        }
      }
      if (!conflict && group.some((f) => f.node.selectionSet)) sameResponseShape(subSelections(group), [...path, name]);
    }
  }

  /** Fields of one response name that may apply to the same object select the same field with the same arguments. */
  function sameForCommonParents(sets: readonly TypedSet[], path: readonly string[]): void {
    const key = keyOf(sets);
    if (exhausted || parentsChecked.has(key)) return;
    parentsChecked.add(key);
    const fields = collect(sets, key);
    if (!fields) return;
    for (const [name, group] of fields) {
      for (const together of groupsByCommonParent(group)) {
        const first = together[0]!;
        let conflict = false;
        for (let i = 1; i < together.length && !conflict; i++) {
          const other = together[i]!;
          if (other.node.name.value !== first.node.name.value) {
            report([...path, name], `"${first.node.name.value}" and "${other.node.name.value}" are different fields`, first, other);
            conflict = true;
          } else if (argumentsOf(other.node) !== argumentsOf(first.node)) {
            report([...path, name], 'they have differing arguments', first, other);
            conflict = true;
          }
        }
        if (!conflict && together.some((f) => f.node.selectionSet)) sameForCommonParents(subSelections(together), [...path, name]);
      }
    }
  }

  /** Arguments as one comparable text (graphql-js compares printed values, in any order). */
  function argumentsOf(node: FieldNode): string {
    let key = argumentKeys.get(node);
    if (key === undefined) {
      key = (node.arguments ?? [])
        .map((a) => `${a.name.value}:${print(a.value)}`)
        .sort()
        .join(',');
      argumentKeys.set(node, key);
    }
    return key;
  }

  return {
    OperationDefinition(node) {
      const root = schema.getRootType(node.operation);
      if (!root || exhausted) return;
      const sets = [{ set: node.selectionSet, type: root }];
      sameResponseShape(sets, []);
      sameForCommonParents(sets, []);
      if (exhausted) {
        context.reportError(new GraphQLError(`The document is too complex to validate: checking that its fields can merge reads more than ${MAX_FIELD_VISITS} selections. Use fewer repeated fragments and fields.`, { nodes: [node] }));
      }
    },
  };
};

/**
 * Fields that can apply to the same object, for one response name: per object type that parents
 * some of them, its fields with every field of an abstract parent; only the abstract ones when no
 * object type parents any. Fields of two different object types never apply together.
 */
function groupsByCommonParent(group: readonly CollectedField[]): CollectedField[][] {
  if (group.length < 2) return [group as CollectedField[]];
  const abstract: CollectedField[] = [];
  const byObject = new Map<string, CollectedField[]>();
  for (const f of group) {
    if (!isObjectType(f.parent)) abstract.push(f);
    else {
      const list = byObject.get(f.parent.name);
      if (list) list.push(f);
      else byObject.set(f.parent.name, [f]);
    }
  }
  if (byObject.size === 0) return [abstract];
  return [...byObject.values()].map((fields) => (abstract.length ? [...fields, ...abstract] : fields));
}

/** Two types whose values could not be merged into one response field (graphql-js's doTypesConflict). */
function typesConflict(a: GraphQLOutputType, b: GraphQLOutputType): boolean {
  if (isListType(a)) return isListType(b) ? typesConflict(a.ofType, b.ofType) : true;
  if (isListType(b)) return true;
  if (isNonNullType(a)) return isNonNullType(b) ? typesConflict(a.ofType, b.ofType) : true;
  if (isNonNullType(b)) return true;
  if (isLeafType(a) || isLeafType(b)) return a !== b;
  return false;
}
