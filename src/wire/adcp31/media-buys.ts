import type { AnswerContext } from '../answer-codec';
import { answer3 } from '../adcp3/answers';

type Obj = Record<string, any>;

/**
 * 3.1 puts the task's status at the root of every answer (`core/protocol-envelope.json`), so the
 * body `status` that carried the buy's lifecycle in 3.0 is the task's (`completed`) and the
 * lifecycle moves to `media_buy_status` (3.1's `status` there is deprecated and, sharing the key
 * with the envelope, can only hold a value both enums have). 3.1 also requires `revision` and
 * `confirmed_at`, `null` for a buy not yet confirmed (one awaiting approval, or rejected).
 */
function withBuyStatus(answer: Obj): Obj {
  const { status, ...rest } = answer;
  return { status: 'completed', media_buy_status: status, ...rest };
}

const confirmed = (buy: Obj): Obj => ({ ...buy, confirmed_at: buy.confirmed_at ?? null });

/** create_media_buy: a buy awaiting approval stays 3.0's submitted envelope (3.1's third arm). */
export function createMediaBuy31(result: Obj, ctx: AnswerContext): Obj {
  const answer = answer3('create_media_buy', result, ctx);
  if (answer.status === 'submitted') return answer;
  return confirmed(withBuyStatus(answer));
}

export const updateMediaBuy31 = (result: Obj, ctx: AnswerContext): Obj => withBuyStatus(answer3('update_media_buy', result, ctx));

/** get_media_buys: each buy's `status` is its lifecycle (the envelope's is the answer's root one). */
export function getMediaBuys31(result: Obj, ctx: AnswerContext): Obj {
  const answer = answer3('get_media_buys', result, ctx);
  return { ...answer, media_buys: (answer.media_buys as Obj[]).map(confirmed) };
}
