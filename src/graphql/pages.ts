import { AppError } from '../shared/errors';
import { hasUnstorableText } from '../shared/nul';

/** The most items one page of a list or connection may ask for. */
export const MAX_PAGE = 100;

/** A page size (`first`) between 1 and `max`, else the caller's error at `first`. */
export function checkFirst(first: number, max = MAX_PAGE): void {
  if (!Number.isInteger(first) || first < 1 || first > max) throw new AppError('VALIDATION_ERROR', `first must be between 1 and ${max}`, 'first');
}

/** A connection cursor: the last item's id in base64url. */
export const encodeCursor = (id: string): string => Buffer.from(id).toString('base64url');

/**
 * The id a cursor names, when it is one `encodeCursor` gave (it round-trips) and `isId` accepts.
 * Anything else (a forged or mangled cursor) is the caller's error at `after`, never a query:
 * decoded garbage can hold a NUL, which PostgreSQL refuses to compare.
 */
export function decodeCursor(cursor: string, isId: (id: string) => boolean = (id) => id.length > 0 && !hasUnstorableText(id)): string {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!isId(id) || encodeCursor(id) !== cursor) throw new AppError('VALIDATION_ERROR', 'after is not a cursor this connection gave (pass a pageInfo.endCursor)', 'after');
  return id;
}
