import { webhookQueries, type WebhookActivityRow } from '../../projections/webhooks';
import type { TaskPorts } from './ports';

export type { WebhookActivityRow } from '../../projections/webhooks';

/**
 * The attempts of the webhooks the seller fired about these buys of one owner, newest fire first,
 * at most `rows` attempts per buy (callers have checked the caller may read the buys).
 */
export function webhookAttemptsOfBuys(ports: Pick<TaskPorts, 'readModels'>, owner: string, mediaBuyIds: readonly string[], rows: number): Promise<WebhookActivityRow[]> {
  return webhookQueries.attemptsOfBuys(ports.readModels, owner, mediaBuyIds, rows);
}
