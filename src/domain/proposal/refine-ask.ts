import type { Allocation } from './proposal';

/**
 * What this seller understands of a buyer's free-text ask on a proposal. It is not a language
 * model: it reads two kinds of instruction, by channel, and says plainly what it did and what it
 * could not do (AdCP's `refinement_applied`: applied, partial or unable, with notes).
 *   - "drop | remove | exclude <channel> [… to <channel>]": the channel's allocations go, their
 *     share is spread over the `to` channel's allocations, or over all that remain;
 *   - "shift | move | put N% [of the budget] to | into | on <channel>": the channel's
 *     allocations get N% together (in their current proportions), the others the rest.
 * Sentences (and clauses joined by ";") are read in order, each on the plan the last one left.
 */
export interface AskOutcome {
  allocations: Allocation[];
  applied: string[];
  unable: string[];
}

/** Words a buyer may use for each catalog channel (the catalog's name and AdCP 3.0's come first). */
const CHANNEL_WORDS: Readonly<Record<string, readonly string[]>> = {
  ctv: ['ctv', 'connected tv', 'connected-tv', 'streaming tv'],
  video: ['olv', 'online video', 'video', 'pre-roll', 'preroll'],
  display: ['display', 'banner', 'banners'],
  audio: ['audio', 'podcast', 'podcasts', 'radio'],
  dooh: ['dooh', 'digital out-of-home', 'out-of-home', 'ooh'],
  social: ['social'],
  search: ['search'],
  linear_tv: ['linear tv', 'linear', 'broadcast tv', 'broadcast'],
};

function channelIn(text: string, known: ReadonlySet<string>): string | undefined {
  let best: { channel: string; at: number } | undefined;
  for (const channel of known) {
    for (const word of CHANNEL_WORDS[channel] ?? [channel.replace(/_/g, ' ')]) {
      const at = text.search(new RegExp(`\\b${word.replace(/[-\s]/g, '[-\\s]')}\\b`));
      if (at >= 0 && (!best || at < best.at)) best = { channel, at };
    }
  }
  return best?.channel;
}

/** Percentages to two decimals that still sum to exactly 100 (the remainder goes to the largest). */
export function normalized(allocations: Allocation[]): Allocation[] {
  const total = allocations.reduce((s, a) => s + a.allocation_percentage, 0);
  const out = allocations.map((a) => ({ ...a, allocation_percentage: Math.round((a.allocation_percentage / total) * 10_000) / 100 }));
  const rest = Math.round((100 - out.reduce((s, a) => s + a.allocation_percentage, 0)) * 100) / 100;
  if (rest !== 0) {
    const largest = out.reduce((m, a, i) => (a.allocation_percentage > out[m]!.allocation_percentage ? i : m), 0);
    out[largest] = { ...out[largest]!, allocation_percentage: Math.round((out[largest]!.allocation_percentage + rest) * 100) / 100 };
  }
  return out;
}

/** Gives `inChannel`'s allocations `share` percent together, keeping proportions on both sides. */
function withShare(allocations: Allocation[], inChannel: (a: Allocation) => boolean, share: number): Allocation[] {
  const sumOf = (pred: (a: Allocation) => boolean) => allocations.filter(pred).reduce((s, a) => s + a.allocation_percentage, 0);
  const inside = sumOf(inChannel);
  const outside = 100 - inside;
  return normalized(
    allocations.map((a) => {
      const mine = inChannel(a);
      const base = mine ? inside : outside;
      const target = mine ? share : 100 - share;
      const split = base > 0 ? a.allocation_percentage / base : 1 / allocations.filter((b) => inChannel(b) === mine).length;
      return { ...a, allocation_percentage: target * split };
    }),
  );
}

export function applyAsk(start: readonly Allocation[], ask: string, channelsOf: (productId: string) => readonly string[]): AskOutcome {
  let allocations = [...start];
  const applied: string[] = [];
  const unable: string[] = [];
  const known = new Set(start.flatMap((a) => channelsOf(a.product_id)));
  for (const clause of ask.split(/(?<=[.!?;])\s+|;\s*/).map((c) => c.trim().replace(/[.!?;]+$/, '')).filter(Boolean)) {
    const text = clause.toLowerCase();
    const has = (channel: string) => (a: Allocation) => channelsOf(a.product_id).includes(channel);
    const shift = /\b(?:shift|move|put|allocate)\b[^%]*?(\d{1,3}(?:\.\d+)?)\s*%[^]*?\b(?:to|into|on|toward|towards)\b\s+([^]*)$/.exec(text);
    const drop = /\b(?:drop|remove|exclude|cut out|lose)\b\s+([^]*)$/.exec(text);
    if (shift) {
      const share = Number(shift[1]);
      const channel = channelIn(shift[2]!, known);
      if (!channel) unable.push(`"${clause}": no allocation of this plan is in the channel named`);
      else if (share > 100) unable.push(`"${clause}": ${share}% is more than the whole budget`);
      else if (allocations.every(has(channel))) unable.push(`"${clause}": every allocation of this plan is ${channel} already`);
      else {
        allocations = withShare(allocations, has(channel), share);
        applied.push(`${channel} now has ${share}% of the budget`);
      }
    } else if (drop) {
      const [what, to] = drop[1]!.split(/\b(?:to|into|toward|towards)\b/, 2) as [string, string | undefined];
      const channel = channelIn(what, known);
      const target = to !== undefined ? channelIn(to, known) : undefined;
      const kept = channel ? allocations.filter((a) => !has(channel)(a)) : [];
      if (!channel) unable.push(`"${clause}": no allocation of this plan is in the channel named`);
      else if (kept.length === 0) unable.push(`"${clause}": dropping ${channel} would leave the plan empty`);
      else {
        const freed = 100 - kept.reduce((s, a) => s + a.allocation_percentage, 0);
        const toTarget = target !== undefined && kept.some(has(target));
        const receivers = toTarget ? has(target) : () => true;
        const receiving = kept.filter(receivers).reduce((s, a) => s + a.allocation_percentage, 0);
        allocations = normalized(kept.map((a) => (receivers(a) ? { ...a, allocation_percentage: a.allocation_percentage + (receiving > 0 ? (freed * a.allocation_percentage) / receiving : freed / kept.filter(receivers).length) } : a)));
        applied.push(`dropped ${channel}; its share went to ${toTarget ? target : 'the rest of the plan'}`);
      }
    } else {
      unable.push(`"${clause}": not an instruction this seller applies (it reads "drop <channel>" and "shift N% to <channel>")`);
    }
  }
  return { allocations, applied, unable };
}
