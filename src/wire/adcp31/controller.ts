import { isObject } from '../../shared/objects';

type Obj = Record<string, unknown>;

/**
 * `comply_test_controller` in AdCP 3.1 (compliance/comply-test-controller-response.json): the
 * task `status` every 3.1 response carries (the protocol envelope; `failed` on a ControllerError,
 * whose `success: false` and `error` stay as 3.0 had them), and a ForcedDirectiveSuccess whose
 * `forced` holds only `arm` and `task_id` (closed in 3.1; 3.0's answer also named the operation).
 */
export function controller31(r: Obj): Obj {
  const { forced, ...rest } = r;
  return {
    status: r.success === false ? 'failed' : 'completed',
    ...rest,
    ...(isObject(forced) ? { forced: { arm: forced.arm, ...(forced.task_id !== undefined ? { task_id: forced.task_id } : {}) } } : {}),
  };
}
