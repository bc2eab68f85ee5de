import { OWN_FORMAT_AGENT, type Format } from '../domain/catalog/catalog';
import { isReservedTestDomain } from './accounts';

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
  if (options.placeholders && URL.canParse(id.agent_url) && isReservedTestDomain(new URL(id.agent_url).hostname)) return formats.find((f) => f.format_id.id === id.id);
  return undefined;
}
