import type { BusHandler } from '../../src/bus/port';
import type { TaskEvent, TaskStatus } from '../../src/domain/task/task';
import type { WebhookAuth, WebhookEvent } from '../../src/domain/webhook/webhook';
import { appendOnce } from '../../src/application/command-handler';
import type { EventStore, StoredEvent } from '../../src/eventstore/port';
import { a2aTaskEnvelope, newIdempotencyKey, TASK_ENVELOPES } from '../../src/webhooks/envelope';
import { newEventId, publicId } from '../../src/shared/ids';
import { taskResultIn } from '../../src/wire/codecs';
import { releaseOf } from '../../src/application/task-reads';

export const group = 'webhook-dispatcher';

/**
 * Statuses that fire a task webhook once the initial response was `submitted` (spec §3 rules
 * 2–3). `rejected` is included: an operator's rejection after review is a status change the
 * buyer must hear about, and AdCP lists it among task statuses.
 */
const NOTIFY: ReadonlySet<TaskStatus> = new Set(['working', 'input-required', 'completed', 'failed', 'canceled', 'rejected']);

type Submitted = Extract<TaskEvent, { type: 'TaskSubmitted' }>['data'];
export type PushConfig = { url: string; operation_id: string; token?: string; authentication?: { schemes: string[]; credentials: string } };

export function authOf(config: { readonly authentication?: { readonly schemes: readonly string[]; readonly credentials: string } }, wire?: 'adcp3'): WebhookAuth {
  const a = config.authentication;
  if (!a) return wire === 'adcp3' ? { scheme: 'rfc9421', key_use: 'webhook-signing' } : { scheme: 'rfc9421' };
  return a.schemes[0] === 'HMAC-SHA256' ? { scheme: 'hmac-sha256', secret: a.credentials } : { scheme: 'bearer', token: a.credentials };
}

/** The delivery stream of one status change: handling the same event twice schedules it once. */
export const deliveryStreamFor = (e: StoredEvent) => `webhook-${e.streamId}.${e.streamVersion}`;

/**
 * Task status changes → scheduled webhook fires. Only tasks exist for operations whose initial
 * response was `submitted` (a synchronous, terminal answer never creates one), so rule 1 holds
 * by construction. The envelope is serialized here, once: every retry sends these bytes.
 */
export function webhookDispatcher(store: EventStore): BusHandler {
  return async (events) => {
    for (const e of events) {
      if (e.type !== 'TaskStatusChanged') continue;
      const change = (e as unknown as Extract<TaskEvent, { type: 'TaskStatusChanged' }>).data;
      if (!NOTIFY.has(change.status)) continue;
      const [first] = await store.readStream(e.streamId, { limit: 1 });
      const submitted = first?.data as Submitted | undefined;
      if (!submitted) continue;
      // An AdCP requester gets the result (and the webhook) in the release its call was answered
      // in, 3.0 unless it pinned 3.1; the spec's requester gets the spec's shape.
      const release = releaseOf(submitted);
      const result = submitted.wire === 'adcp3' && change.result ? taskResultIn(release, submitted.task_type, change.result, new Date(change.at)) : change.result;
      const taskId = publicId(change.task_id);
      const config = submitted.push_notification_config as PushConfig | undefined;
      if (config) {
        const idempotencyKey = newIdempotencyKey();
        const body = TASK_ENVELOPES[release]({
          idempotencyKey,
          taskId,
          // Echoed as the registration named it (the URL is never read for it).
          operationId: config.operation_id,
          notificationId: notificationIdOf(taskId, e),
          ...(config.token !== undefined ? { token: config.token } : {}),
          taskType: submitted.task_type,
          status: change.status,
          timestamp: change.at,
          message: change.message,
          result,
          context: submitted.context,
        });
        await schedule(store, deliveryStreamFor(e), submitted, change, idempotencyKey, config.url, authOf(config, submitted.wire), body);
      }
      // Registered the A2A way: the same change in A2A's own envelope, a delivery of its own (a
      // buyer may register both ways and hear both).
      const a2a = submitted.a2a;
      if (a2a?.push_notification_config) {
        const push = a2a.push_notification_config;
        const body = a2aTaskEnvelope(
          { taskId, contextId: a2a.context_id, taskType: submitted.task_type, status: change.status, timestamp: change.at, message: change.message, result, context: submitted.context },
          { artifactId: newEventId(), messageId: newEventId() },
        );
        await schedule(store, `${deliveryStreamFor(e)}.a2a`, submitted, change, newIdempotencyKey(), push.url, authOf(push, 'adcp3'), body);
      }
    }
  };
}

/**
 * A status change's notification id: the task and the change's place in its stream, so every
 * emission of this change names it alike (3.1's charset, `[A-Za-z0-9_.:-]`, at most 255).
 */
export function notificationIdOf(taskId: string, change: Pick<StoredEvent, 'streamVersion'>): string {
  return `${taskId.replace(/[^A-Za-z0-9_.:-]/g, '_').slice(0, 200)}.status.${change.streamVersion}`;
}

/** One delivery, scheduled once: a redelivered event finds its stream already written. */
async function schedule(store: EventStore, stream: string, submitted: Submitted, change: Extract<TaskEvent, { type: 'TaskStatusChanged' }>['data'], idempotencyKey: string, url: string, auth: WebhookAuth, envelope: Record<string, unknown>): Promise<void> {
  const scheduled: Extract<WebhookEvent, { type: 'WebhookScheduled' }> = {
    type: 'WebhookScheduled',
    data: {
      idempotency_key: idempotencyKey,
      owner: submitted.owner,
      notification_type: 'task_status',
      task_id: change.task_id,
      ...(submitted.task_type === 'create_media_buy' ? { media_buy_id: submitted.resource_id } : {}),
      url,
      auth,
      // Serialized here, once: every retry sends these bytes.
      body: JSON.stringify(envelope),
      scheduled_at: new Date().toISOString(),
    },
  };
  await appendOnce(store, stream, [scheduled]);
}
