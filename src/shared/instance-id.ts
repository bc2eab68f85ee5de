import { randomUUID } from 'node:crypto';

/**
 * This process among the instances sharing a database: who holds a lease or a claim. Unique per
 * start, so a restarted instance never mistakes a claim of its previous life for its own.
 */
export const INSTANCE_ID = `${process.pid}-${randomUUID()}`;
