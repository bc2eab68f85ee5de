import type { AnswerCodec, AnswerContext } from '../answer-codec';
import { answer3 } from '../adcp3/answers';
import { adcpError31 } from './errors';
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
 *   arguments pin. Not done: CREDENTIAL_IN_ARGS and IDEMPOTENCY_IN_FLIGHT (the agent does not
 *   detect either situation today: a key in the arguments is ignored, and a retry while the first
 *   call runs waits on the event store's append and replays).
 *
 * TODO(issue 36, later slices): the 3.1 differences still answered as 3.0 answers them:
 * - `idempotency_key` on reads with keyed replay for get_products; `replayed` on replays;
 * - tasks: `get_task_status` and `list_tasks`; a task's later result (tasks_get, the A2A stream,
 *   webhooks) in the release its call was served in, which means recording that release with the
 *   task (today they answer in 3.0);
 * - webhooks: `operation_id` (required, echoed verbatim from push_notification_config),
 *   `notification_id`, `token`;
 * - comply_test_controller: `account.sandbox: true` required, unknown scenarios accepted, the
 *   seller scenarios 3.1 adds (`seed_account`, `force_get_products_arm`,
 *   `force_upstream_unavailable`, …);
 * - `sync_governance` required by the 3.1 sales specialisms;
 * - the other tools' answers (creatives, accounts, audiences, catalogs, governance, …);
 * - REST with a version (`POST /api/tasks/{task}` carrying `adcp_version`): still the spec's or
 *   3.0's answer, chosen by `adcp_major_version: 3` alone;
 * - `call_adcp_agent` forwarding to another agent: the caller's pin is not passed on (only its
 *   `params` are), and an answer without its own `adcp_version` is passed on with this agent's.
 */
type Obj = Record<string, any>;

/** The tools whose 3.1 answer differs from 3.0's by more than the envelope. */
const answers31: Readonly<Record<string, (result: Obj, ctx: AnswerContext) => Obj>> = {
  get_products: products31,
  create_media_buy: createMediaBuy31,
  update_media_buy: updateMediaBuy31,
  get_media_buys: getMediaBuys31,
};

export const adcp31: AnswerCodec = {
  version: '3.1',
  answer: (task, result, ctx) => (Object.hasOwn(answers31, task) ? answers31[task]!(result, ctx) : answer3(task, result, ctx)),
  capabilities: (declared) => declared,
  error: adcpError31,
  envelope: () => ({ adcp_version: '3.1' }),
  failedEnvelope: () => ({ status: 'failed' }),
};
