import { OWN_FORMAT_AGENT, type Format } from '../domain/catalog/catalog';
import { isPlaceholderAgent } from './accounts';

type FormatId = { agent_url: string; id: string };

/** This agent's URL as buyers name it, for the formats it defines itself. */
export const ownAgentUrl = (origin: string | undefined) => `${(origin ?? 'http://127.0.0.1').replace(/\/+$/, '')}/mcp`;

/** A format id as buyers see it: this seller's own formats under its own agent URL. */
export function publicFormatId<T extends FormatId>(id: T, origin: string | undefined): T {
  return id.agent_url === OWN_FORMAT_AGENT ? { ...id, agent_url: ownAgentUrl(origin) } : id;
}

const canonical = (url: string) => url.replace(/\/+$/, '');

/**
 * The seller's format a buyer's reference names: the exact agent and id; for this agent's own URL
 * (with or without `/mcp`), its own format of that id; and for an agent on a reserved test domain
 * (scripted tests name `https://your-agent.example.com`), the seller's format of that id, since
 * such an agent can only stand for this seller.
 */
export function resolveFormat(formats: readonly Format[], id: FormatId, origin: string | undefined, options: { placeholders: boolean }): Format | undefined {
  const agent = canonical(id.agent_url);
  const exact = formats.find((f) => f.format_id.id === id.id && canonical(f.format_id.agent_url) === agent);
  if (exact) return exact;
  if (origin && (agent === canonical(ownAgentUrl(origin)) || agent === canonical(origin))) return formats.find((f) => f.format_id.agent_url === OWN_FORMAT_AGENT && f.format_id.id === id.id);
  if (options.placeholders && isPlaceholderAgent(id.agent_url)) return formats.find((f) => f.format_id.id === id.id);
  return undefined;
}

/** A reference the seller cannot take: why, and every format it does take (each once, as a 3.0 format_id). */
export interface FormatRefusal {
  message: string;
  accepted_values: FormatId[];
}

/**
 * The one rule by which sync_creatives, build_creative and preview_creative take a buyer's format
 * reference. Accepted: a format of the formats a request may name (formatsFor: the operator's
 * catalog, which carries this seller's own formats and the standard formats of AdCP's reference
 * creative agent it takes by id, and under a sandbox account that sandbox's seeded formats), by
 * exact agent and id, by this agent's own URL, or (under a sandbox account only) by id on a
 * placeholder agent of a reserved test domain. Anything else is refused, the same way by all three:
 * a VALIDATION_ERROR on the format_id saying why, with accepted_values listing the accepted formats.
 */
export function acceptFormat(formats: readonly Format[], id: FormatId, origin: string | undefined, sandbox: boolean): { format: Format } | { refusal: FormatRefusal } {
  const format = resolveFormat(formats, id, origin, { placeholders: sandbox });
  return format ? { format } : { refusal: formatRefusal(formats, id, origin, sandbox) };
}

function formatRefusal(formats: readonly Format[], id: FormatId, origin: string | undefined, sandbox: boolean): FormatRefusal {
  const accepted: FormatId[] = [];
  const seen = new Set<string>();
  for (const f of formats) {
    const shown = publicFormatId({ agent_url: f.format_id.agent_url, id: f.format_id.id }, origin);
    const key = `${canonical(shown.agent_url)}#${shown.id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    accepted.push(shown);
  }
  const agent = canonical(id.agent_url);
  const own = canonical(ownAgentUrl(origin));
  let why: string;
  if (isPlaceholderAgent(id.agent_url) && !sandbox) {
    why = `${id.agent_url} is a placeholder agent (a reserved test domain), which stands for this seller only under a sandbox account`;
  } else if (isPlaceholderAgent(id.agent_url)) {
    why = `this seller, which the placeholder agent ${id.agent_url} stands for in a sandbox, has no format ${id.id}`;
  } else if (agent === own || (origin !== undefined && agent === canonical(origin))) {
    why = `this seller has no format ${id.id} of its own`;
  } else if (accepted.some((f) => canonical(f.agent_url) === agent)) {
    why = `this seller does not take ${agent}'s format ${id.id}`;
  } else {
    why = `this seller takes no formats of ${agent}`;
  }
  const agents = [...new Set(accepted.map((f) => canonical(f.agent_url)).filter((a) => a !== own))];
  const from = agents.length ? `, and the ones it takes from ${agents.join(', ')}` : '';
  return {
    message: `format ${id.id} of ${id.agent_url} is not one this seller accepts: ${why}. It accepts the formats in accepted_values (list_creative_formats describes them): its own, under ${own}${from}`,
    accepted_values: accepted,
  };
}
