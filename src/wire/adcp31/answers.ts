import type { AnswerCodec, AnswerContext } from '../answer-codec';
import { adcp30, answer3 } from '../adcp3/answers';
import { controller31 } from './controller';
import { governance31, governanceAware31 } from './governance';

/** A task's 3.1 answer from its 3.0 one, for the tasks whose answers differ: one line per module. */
const answers31: Readonly<Record<string, (answer: Record<string, any>, ctx: AnswerContext) => Record<string, any>>> = {
  ...governance31,
  comply_test_controller: controller31,
};

const answer31 = (task: string, answer: Record<string, any>, ctx: AnswerContext) => (Object.hasOwn(answers31, task) ? answers31[task]!(answer, ctx) : answer);

/**
 * AdCP 3.1, for a call pinned `adcp_version: "3.1"` (or a newer 3.x, downshifted to 3.1).
 * 3.1 is additive over 3.0, so a 3.1 answer is the 3.0 answer plus 3.1's differences, each
 * written here as it is implemented. Implemented so far (issue 36, version negotiation):
 *
 * - the echo: every answer names the release served, `adcp_version: "3.1"`, at its root;
 * - governance (`./governance.ts`): check_governance's `verdict`, report_plan_outcome's
 *   `outcome_state`, get_plan_audit_logs' entries' `verdict`, where 3.0 said `status`;
 * - `get_adcp_capabilities`: `adcp.supported_versions` (3.0's answer carries it too: 3.0.6
 *   leaves `adcp` open, and a buyer discovers the releases without a pin, as
 *   VERSION_UNSUPPORTED's recovery tells it to);
 * - tasks (elsewhere, as they are not one answer's shape): `get_task_status` and `list_tasks`
 *   (application/tasks/task-tasks.ts); a task records the release its call was served in, and its
 *   later result (task reads, the A2A stream, webhooks) is written by that release's codec
 *   (`taskResultIn` in ../codecs.ts); 3.1 webhooks add `notification_id` and `token`
 *   (webhooks/envelope.ts);
 * - comply_test_controller (`./controller.ts`): the task `status`, and `forced` closed to
 *   `{arm, task_id}`; the 3.1 controller itself (`account.sandbox: true` required, unknown
 *   scenarios answered UNKNOWN_SCENARIO, `seed_account`, `force_get_products_arm`,
 *   `force_upstream_unavailable`) is application/sandbox/controller.ts's CONTROLLER_RELEASES;
 * - sync_governance (`./governance.ts`): one agent per account, `{url}` only (its request rules,
 *   `./requests.ts`, refuse more than one and `categories`); capabilities declare
 *   `media_buy.governance_aware`;
 * - `idempotency_key` on reads: tolerated on every read, keyed replay for get_products
 *   (`./requests.ts`, run by the bindings with application/idempotency.ts; `replayed: true` on a
 *   replay);
 * - REST with a version: `POST /api/tasks/{task}` carrying `adcp_version` answers through this
 *   codec as MCP does (http/tasks-route.ts).
 *
 * TODO(issue 36, later slices): the 3.1 differences still answered as 3.0 answers them:
 * - get_products: `cache_scope` (required by 3.1.19's response);
 * - the task `status` on every response (3.1's envelope), and on create/update `media_buy_status`
 *   beside the deprecated body `status` (whose 3.1 values differ from 3.0's buy lifecycle);
 * - `confirmed_at` and `revision` required on create and in get_media_buys;
 * - get_media_buy_delivery / reporting: `video_completions` gone from the metrics enum;
 * - errors: 3.1's codes (`AUTH_MISSING` / `AUTH_INVALID` for `AUTH_REQUIRED`,
 *   `CREDENTIAL_IN_ARGS`, `IDEMPOTENCY_IN_FLIGHT`, `ACTION_NOT_ALLOWED`, `PROPOSAL_NOT_FOUND`, …)
 *   with `recovery` on every error, and `issues[]` for validation errors (`error` below);
 * - `call_adcp_agent` forwarding to another agent: the caller's pin is not passed on (only its
 *   `params` are), and an answer without its own `adcp_version` is passed on with this agent's.
 */
export const adcp31: AnswerCodec = {
  version: '3.1',
  answer: (task, result, ctx) => answer31(task, answer3(task, result, ctx), ctx),
  capabilities: (declared) => governanceAware31(declared),
  error: (task, request, err) => adcp30.error(task, request, err),
  envelope: () => ({ adcp_version: '3.1' }),
};
