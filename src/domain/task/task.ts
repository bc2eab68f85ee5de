import { AppError } from '../../shared/errors';
import { assertNever, type Decider } from '../decider';
import type { AdcpRelease } from '../../wire/version';

/** AdCP task statuses (spec §3). */
export type TaskStatus = 'submitted' | 'working' | 'input-required' | 'completed' | 'failed' | 'canceled' | 'rejected';
export const TERMINAL: readonly TaskStatus[] = ['completed', 'failed', 'canceled', 'rejected'];

/**
 * An asynchronous operation waiting for the seller. Created `submitted`; the operator approves
 * (working → completed), rejects, or asks for input. Terminal statuses are final.
 */
export type TaskEvent =
  | {
      readonly type: 'TaskSubmitted';
      readonly data: {
        readonly task_id: string;
        readonly task_type: string;
        readonly owner: string;
        readonly resource_id: string;
        readonly push_notification_config?: Record<string, unknown>;
        readonly context?: Record<string, unknown>;
        /** The request to carry out on approval, for tasks whose work waits (sync_creatives). */
        readonly request?: Record<string, unknown>;
        /** Sandbox: the compliance controller forced this task; only it (or the operator) completes it. */
        readonly awaits_controller?: boolean;
        /** The wire its requester speaks: its webhooks carry results in that shape (default: the spec's). */
        readonly wire?: 'adcp3';
        /**
         * The AdCP release the call that started it was answered in, when not 3.0 (absent: 3.0, as
         * every task recorded before 3.1 was): its later answers and webhooks are written in it.
         */
        readonly adcp_version?: AdcpRelease;
        /** Asked over A2A: the conversation (A2A `contextId`) the task belongs to, and where its A2A-native push notifications go. */
        readonly a2a?: A2aTaskRegistration;
        readonly message: string;
        readonly at: string;
      };
    }
  | {
      readonly type: 'TaskStatusChanged';
      readonly data: {
        readonly task_id: string;
        readonly from: TaskStatus;
        readonly status: TaskStatus;
        readonly message: string;
        readonly result?: Record<string, unknown>;
        readonly actor: string;
        readonly at: string;
      };
    };

export type TaskCommand =
  | { readonly type: 'SubmitTask'; readonly taskId: string; readonly taskType: string; readonly owner: string; readonly resourceId: string; readonly pushNotificationConfig?: Record<string, unknown>; readonly context?: Record<string, unknown>; readonly request?: Record<string, unknown>; readonly awaitsController?: boolean; readonly wire?: 'adcp3'; readonly adcpVersion?: AdcpRelease; readonly a2a?: A2aTaskRegistration; readonly message: string; readonly now: string }
  | { readonly type: 'ChangeTaskStatus'; readonly status: TaskStatus; readonly message: string; readonly result?: Record<string, unknown>; readonly actor: string; readonly now: string };

/**
 * A task started over A2A: its conversation, and the push notification config registered the A2A
 * way (`configuration.pushNotificationConfig`), whose notifications go out in A2A's own envelope.
 */
export interface A2aTaskRegistration {
  readonly context_id: string;
  readonly push_notification_config?: { readonly url: string; readonly authentication?: { readonly schemes: readonly string[]; readonly credentials: string } };
}

export type TaskState =
  | { readonly status: 'none' }
  | { readonly status: TaskStatus; readonly taskId: string; readonly taskType: string; readonly owner: string; readonly resourceId: string };

export const taskStream = (taskId: string) => `task-${taskId}`;

/** Which statuses may follow which (spec §3 names them; the order follows A2A task states). */
const NEXT: Record<TaskStatus, readonly TaskStatus[]> = {
  submitted: ['working', 'input-required', 'completed', 'failed', 'canceled', 'rejected'],
  working: ['input-required', 'completed', 'failed', 'canceled', 'rejected'],
  'input-required': ['working', 'completed', 'failed', 'canceled', 'rejected'],
  completed: [],
  failed: [],
  canceled: [],
  rejected: [],
};

export const taskDecider: Decider<TaskCommand, TaskEvent, TaskState> = {
  initialState: () => ({ status: 'none' }),
  decide(command, state) {
    switch (command.type) {
      case 'SubmitTask':
        if (state.status !== 'none') throw new AppError('CONFLICT', `task ${command.taskId} exists`, 'task_id');
        return [
          {
            type: 'TaskSubmitted',
            data: {
              task_id: command.taskId,
              task_type: command.taskType,
              owner: command.owner,
              resource_id: command.resourceId,
              ...(command.pushNotificationConfig ? { push_notification_config: command.pushNotificationConfig } : {}),
              ...(command.context ? { context: command.context } : {}),
              ...(command.request ? { request: command.request } : {}),
              ...(command.awaitsController ? { awaits_controller: true } : {}),
              ...(command.wire ? { wire: command.wire } : {}),
              ...(command.adcpVersion ? { adcp_version: command.adcpVersion } : {}),
              ...(command.a2a ? { a2a: command.a2a } : {}),
              message: command.message,
              at: command.now,
            },
          },
        ];
      case 'ChangeTaskStatus': {
        if (state.status === 'none') throw new AppError('TASK_NOT_FOUND', 'no such task', 'task_id');
        if (!NEXT[state.status].includes(command.status)) {
          throw new AppError('INVALID_STATE', `task ${state.taskId} is ${state.status}; it cannot become ${command.status}`, 'task_id', { current_status: state.status });
        }
        return [
          {
            type: 'TaskStatusChanged',
            data: { task_id: state.taskId, from: state.status, status: command.status, message: command.message, ...(command.result ? { result: command.result } : {}), actor: command.actor, at: command.now },
          },
        ];
      }
      default:
        return assertNever(command);
    }
  },
  evolve(state, event) {
    switch (event.type) {
      case 'TaskSubmitted':
        return { status: 'submitted', taskId: event.data.task_id, taskType: event.data.task_type, owner: event.data.owner, resourceId: event.data.resource_id };
      case 'TaskStatusChanged':
        return state.status === 'none' ? state : { ...state, status: event.data.status };
      default:
        return assertNever(event);
    }
  },
};
