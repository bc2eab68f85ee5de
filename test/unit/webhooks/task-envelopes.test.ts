import { taskDecider } from '../../../src/domain/task/task';
import { TASK_ENVELOPES, type TaskEnvelopeInput } from '../../../src/webhooks/envelope';
import { notificationIdOf } from '../../../consumers/webhook-dispatcher';
import { codecFor } from '../../../src/wire/codecs';
import { validateAdcp3 } from '../../../src/wire/adcp3/schemas';
import { adcp31 } from '../../support/adcp31';

const input: TaskEnvelopeInput = {
  idempotencyKey: 'whk_0123456789abcdefghij',
  taskId: 'task_1',
  operationId: 'op-7',
  notificationId: 'task_1.status.2',
  token: 'a-token-of-sixteen-or-more',
  taskType: 'create_media_buy',
  status: 'completed',
  timestamp: '2026-11-27T07:00:00.000Z',
  message: 'approved',
  result: { media_buy_id: 'mb_1' },
  context: { trace: 't' },
};

describe('task webhooks by release', () => {
  it('3.0: exactly the envelope sent before 3.1 (no notification_id, no token), valid against 3.0.6', () => {
    const body = TASK_ENVELOPES['3.0'](input);
    expect(JSON.stringify(body)).toBe(
      JSON.stringify({ idempotency_key: input.idempotencyKey, task_id: 'task_1', operation_id: 'op-7', task_type: 'create_media_buy', domain: 'media-buy', protocol: 'media-buy', status: 'completed', timestamp: input.timestamp, message: 'approved', result: { media_buy_id: 'mb_1' }, context: { trace: 't' } }),
    );
    expect(validateAdcp3('core/mcp-webhook-payload.json', body)).toMatchObject({ valid: true });
  });

  it('3.1: the registration\'s operation_id and token verbatim, the change\'s notification_id; valid against 3.1.19', () => {
    const body = TASK_ENVELOPES['3.1'](input);
    expect(body).toMatchObject({ operation_id: 'op-7', token: 'a-token-of-sixteen-or-more', notification_id: 'task_1.status.2' });
    expect(adcp31().validate('core/mcp-webhook-payload.json', body)).toMatchObject({ valid: true, errors: [] });
    // Without a registered token, none is sent (receivers must not take absence as a failure then).
    const { token: _t, ...noToken } = input;
    expect(TASK_ENVELOPES['3.1'](noToken)).not.toHaveProperty('token');
  });

  it('notification ids: one per status change, the same however often it is emitted, in 3.1\'s charset', () => {
    expect(notificationIdOf('task_abc', { streamVersion: 2 })).toBe('task_abc.status.2');
    expect(notificationIdOf('task_abc', { streamVersion: 2 })).toBe(notificationIdOf('task_abc', { streamVersion: 2 }));
    expect(notificationIdOf('task_abc', { streamVersion: 3 })).not.toBe(notificationIdOf('task_abc', { streamVersion: 2 }));
    expect(notificationIdOf('task with/odd~chars', { streamVersion: 1 })).toMatch(/^[A-Za-z0-9_.:-]{1,255}$/);
    expect(notificationIdOf('x'.repeat(400), { streamVersion: 1 }).length).toBeLessThanOrEqual(255);
  });
});

describe('a task\'s release', () => {
  const submit = { type: 'SubmitTask' as const, taskId: 't1', taskType: 'create_media_buy', owner: 'acme', resourceId: 'mb', message: 'waiting', now: '2026-11-27T07:00:00.000Z' };

  it('given no task, when a 3.1 call submits one, then TaskSubmitted records adcp_version 3.1; a 3.0 call\'s records none (absent means 3.0)', () => {
    const [e31] = taskDecider.decide({ ...submit, wire: 'adcp3', adcpVersion: '3.1' }, taskDecider.initialState());
    expect(e31!.data).toMatchObject({ adcp_version: '3.1' });
    const [e30] = taskDecider.decide({ ...submit, wire: 'adcp3' }, taskDecider.initialState());
    expect(e30!.data).not.toHaveProperty('adcp_version');
  });

  it('a task read\'s result is written in the task\'s release, its envelope in the poll\'s', () => {
    const read = { task_id: 't1', task_type: 'create_media_buy', status: 'completed', message: 'ok', created_at: 'a', updated_at: 'b', history: [], result: { media_buy_id: 'mb', status: 'pending', packages: [] } };
    const now = new Date('2026-11-27T07:00:00Z');
    // A 3.1 task polled by a 3.0 call: the task's release names the result's codec, not the poll's.
    const polled = codecFor('3.0').answer('get_task_status', { ...read, adcp_version: '3.1' }, { now });
    expect(polled).not.toHaveProperty('adcp_version');
    expect(polled.result).toEqual(codecFor('3.1').answer('create_media_buy', read.result, { now }));
    expect(polled.protocol).toBe('media-buy');
    // A task without a recorded release is 3.0's, as every task before 3.1 was.
    expect(codecFor('3.1').answer('tasks_get', read, { now }).result).toEqual(codecFor('3.0').answer('create_media_buy', read.result, { now }));
  });
});
