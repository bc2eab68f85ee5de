import type { AnswerCodec, AnswerContext } from '../answer-codec';
import { answer3 } from '../adcp3/answers';
import { controller31 } from './controller';
import { adcpError31 } from './errors';
import { governance31, governanceAware31 } from './governance';
import { createMediaBuy31, getMediaBuys31, updateMediaBuy31 } from './media-buys';
import { products31 } from './products';

/**
 * AdCP 3.1, for a call pinned `adcp_version: "3.1"` (or a newer 3.x, downshifted to 3.1).
 * 3.1 is additive over 3.0, so a 3.1 answer is the 3.0 answer plus 3.1's differences, each
 * written here as it is implemented. Found by diffing each media-buy tool's 3.0.6 response
 * schema (`@adcp/sdk`'s bundle) against 3.1.19's, and what was done with each:
 *
 * - every response: `core/version-envelope.json` and `core/protocol-envelope.json` are now part
 *   of the response schemas. The echo: every answer names the release served, `adcp_version`,
 *   at its root. The task `status` is required: synchronous answers say `completed` (the MCP
 *   binding adds it, as it did in 3.0 for most tools), errors `failed` (`failedEnvelope`);
 * - `get_adcp_capabilities`: `adcp.supported_versions` (3.0's answer carries it too: 3.0.6
 *   leaves `adcp` open, and a buyer discovers the releases without a pin, as
 *   VERSION_UNSUPPORTED's recovery tells it to). Its other 3.1 additions (`build_version`,
 *   idempotency `in_flight_max_seconds`, measurement, multiplicity, …) are optional and
 *   describe features this seller does not have; `compliance_testing.scenarios` is an open list
 *   now. Nothing else to change;
 * - get_products (`products.ts`): `cache_scope` required; `wholesale_feed_version`,
 *   `pricing_version`, `unchanged`, `filter_diagnostics`, `extensions` are optional (no
 *   conditional fetch here: a request's `if_wholesale_feed_version` is never answered
 *   `unchanged`);
 * - create_media_buy / update_media_buy (`media-buys.ts`): the body `status` is the task's
 *   (`completed`; 3.1's buy-lifecycle `status` is deprecated and shares the key with the
 *   envelope) and the lifecycle is `media_buy_status`; `revision` required on both,
 *   `confirmed_at` required on create (`null` allowed, never with an active buy); the
 *   submitted envelope (awaiting approval) is unchanged; optional `available_actions`,
 *   `currency`, `total_budget` not given;
 * - get_media_buys (`media-buys.ts`): `confirmed_at` (`null` for a buy awaiting approval or
 *   rejected) and `revision` required on every buy; optional `status_as_of`,
 *   `rejection_reason`, `available_actions` not given;
 * - get_media_buy_delivery: only the envelope. `video_completions` left the metrics enum
 *   (`enums/available-metric.json`: `completed_views`); this seller reports impressions, spend,
 *   clicks and ctr, never it. Per-dimension breakdowns now `$ref` shared schemas, with the same
 *   fields for what this seller sends;
 * - provide_performance_feedback: only the envelope;
 * - errors (`errors.ts`): 3.1's codes, `recovery` on every error, `issues[]` on validation
 *   errors, `details` per `error-details/*.json`; a refusal before the tool runs (a forbidden
 *   key; a missing or refused credential, `http/agent-auth.ts`) answers in the release the
 *   arguments pin. CREDENTIAL_IN_ARGS: a credential-bearing key anywhere in a 3.1 call's
 *   arguments is refused, terminal, naming the path only (`./credentials-in-args.ts`, a request
 *   rule). IDEMPOTENCY_IN_FLIGHT is never answered: 3.1 lets a seller block instead, and a retry
 *   while the first call runs waits on the event store's append and replays its answer.
 * - governance (`./governance.ts`): check_governance's `verdict`, report_plan_outcome's
 *   `outcome_state`, get_plan_audit_logs' entries' `verdict`, where 3.0 said `status`;
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
 * - A2A: a failed call's task state is `completed` with an error artifact (3.1: `failed`);
 * - `call_adcp_agent` forwarding to another agent: the caller's pin is not passed on (only its
 *   `params` are), and an answer without its own `adcp_version` is passed on with this agent's.
 */
type Obj = Record<string, any>;

type Encoder = (result: Obj, ctx: AnswerContext) => Obj;

/** An encoder written as a change to the task's 3.0 answer. */
const after3 =
  (task: string, change: (answer: Obj) => Obj): Encoder =>
  (result, ctx) =>
    change(answer3(task, result, ctx));

/** The tools whose 3.1 answer differs from 3.0's by more than the envelope: one line per module. */
const answers31: Readonly<Record<string, Encoder>> = {
  get_products: products31,
  create_media_buy: createMediaBuy31,
  update_media_buy: updateMediaBuy31,
  get_media_buys: getMediaBuys31,
  comply_test_controller: after3('comply_test_controller', controller31),
  ...Object.fromEntries(Object.entries(governance31).map(([task, change]) => [task, after3(task, change)])),
};

export const adcp31: AnswerCodec = {
  version: '3.1',
  answer: (task, result, ctx) => (Object.hasOwn(answers31, task) ? answers31[task]!(result, ctx) : answer3(task, result, ctx)),
  capabilities: (declared) => governanceAware31(declared),
  error: adcpError31,
  envelope: () => ({ adcp_version: '3.1' }),
  failedEnvelope: () => ({ status: 'failed' }),
};
