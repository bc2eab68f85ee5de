import type { CheckpointMove, Sql } from './port';

/**
 * One batch of the projection applier as one round trip: the checkpoint claims and every
 * projection statement, parameters written in as literals, sent as a single simple query between
 * BEGIN and COMMIT. node-postgres has no pipelining and one statement per round trip made a batch
 * of a few creates cost 2 + N round trips, each waited for by every create (read-your-writes).
 *
 * PostgreSQL runs a multi-statement query in order and stops at the first error, leaving the
 * transaction aborted (the caller rolls it back), so statement order within the batch is kept
 * and nothing half-written commits.
 */

/** Raised by adcp_checkpoint_claimed when a checkpoint is not where the batch expects it. */
export const CHECKPOINT_MOVED_CODE = 'AD410';

/** Created once by the store: turns a failed claim into an error, so the round trip stops there. */
export const CHECKPOINT_CLAIM_FUNCTION = `
CREATE OR REPLACE FUNCTION adcp_checkpoint_claimed(p_claimed BIGINT, p_name TEXT) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
  IF p_claimed <> 1 THEN
    RAISE EXCEPTION USING ERRCODE = '${CHECKPOINT_MOVED_CODE}', MESSAGE = 'checkpoint moved', DETAIL = p_name;
  END IF;
END $$;`;

/**
 * A parameter written as SQL text as it is, not as a literal: the event store's inline writes
 * put the append's positions there as expressions over the append function's own values.
 */
export class SqlExpression {
  constructor(readonly text: string) {}
}

/** A SQL literal with the text node-postgres would send as the parameter (undefined: not representable). */
function literal(value: unknown): string | undefined {
  if (value === null || value === undefined) return 'NULL';
  if (value instanceof SqlExpression) return value.text;
  let text: string;
  switch (typeof value) {
    case 'string':
      text = value;
      break;
    case 'number':
    case 'bigint':
      // Quoted, like every literal here: an untyped literal takes its type from where it stands,
      // as a parameter does (a number into a TEXT column or compared with one), and a negative
      // number after a minus (`count - ?`) cannot turn into a `--` comment.
      text = String(value);
      break;
    case 'boolean':
      text = value ? 'true' : 'false';
      break;
    default:
      if (Buffer.isBuffer(value)) return ` E'\\\\x${value.toString('hex')}'`;
      return undefined; // arrays, objects, dates: left to the driver (the statement-per-round-trip path)
  }
  // As pg's escapeLiteral: quotes doubled; with a backslash, an E'' string with backslashes doubled
  // (after a space, as pg writes it, so the E never joins a word before the placeholder).
  const quoted = `'${text.replace(/'/g, "''")}'`;
  return text.includes('\\') ? ` E${quoted.replace(/\\/g, '\\\\')}` : quoted;
}

/** `?` placeholders (projection SQL never holds a literal `?`) filled with literals. */
function inlined(sql: string, params: readonly unknown[] = []): string | undefined {
  let i = 0;
  let missing = false;
  const text = sql.replace(/\?/g, () => {
    const l = literal(params[i++]);
    if (l === undefined) missing = true;
    return l ?? '';
  });
  return missing ? undefined : text;
}

function claim(move: CheckpointMove): string {
  const name = literal(move.name)!;
  const [to, version, from] = [String(move.to), String(move.version ?? 0), String(move.from)];
  const write =
    move.from === 0
      ? `INSERT INTO checkpoints (name, position, version) VALUES (${name}, ${to}, ${version})
         ON CONFLICT (name) DO UPDATE SET position = excluded.position, version = excluded.version
         WHERE checkpoints.position = 0 RETURNING 1`
      : `UPDATE checkpoints SET position = ${to}, version = ${version} WHERE name = ${name} AND position = ${from} RETURNING 1`;
  return `WITH c AS (${write}) SELECT adcp_checkpoint_claimed((SELECT count(*) FROM c), ${name})`;
}

/**
 * Statements as one query text (no BEGIN or COMMIT), or undefined when a parameter cannot be
 * written as a literal: the event store's inline writes (see Projection.consistency).
 */
export function statementsText(statements: readonly Sql[]): string | undefined {
  const texts = statementTexts(statements);
  return texts && texts.join(';\n');
}

/** Each statement as its own text, or undefined when a parameter cannot be written as a literal. */
export function statementTexts(statements: readonly Sql[]): string[] | undefined {
  const texts: string[] = [];
  for (const s of statements) {
    const text = inlined(s.sql, s.params);
    if (text === undefined) return undefined;
    texts.push(text);
  }
  return texts;
}

/** The whole batch as one query text, or undefined when a parameter cannot be written as a literal. */
export function batchText(moves: readonly CheckpointMove[]): string | undefined {
  const parts = ['BEGIN'];
  for (const move of moves) {
    const texts = statementTexts(move.statements as readonly Sql[]);
    if (!texts) return undefined;
    parts.push(claim(move), ...texts);
  }
  parts.push('COMMIT');
  return parts.join(';\n');
}
