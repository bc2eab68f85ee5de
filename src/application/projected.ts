import type { TaskPorts } from './ports';

/**
 * Resolves once the read models show everything this instance has appended (read-your-writes):
 * an operator's command answers after it, so the reads that follow see the change.
 */
export function untilProjected(ports: Pick<TaskPorts, 'store' | 'projections'>): Promise<void> {
  return ports.projections.waitFor(ports.store.appendedUpTo(), ports.store.appendedTypes());
}
