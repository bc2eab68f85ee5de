import type { AgentCard } from '@a2a-js/sdk';
import type { App } from '../../services';
import { toolList } from '../mcp/tools';

/** Where A2A JSON-RPC calls go (the card's `url`). */
export const A2A_PATH = '/a2a';

/** The A2A protocol version this binding speaks (@a2a-js/sdk 0.3). */
const A2A_PROTOCOL_VERSION = '0.3.0';

/**
 * The A2A agent card: one skill per AdCP task (the same tools as MCP, addressed by a DataPart
 * `{skill, input}`), JSON in and out, and how to authenticate: an `sk_` API key or an OAuth
 * access token as a bearer credential (the embedded authorization server's authorization-code flow
 * when this gateway is its own issuer).
 */
export function agentCard(app: App, origin: string): AgentCard {
  const issuer = app.oauth.issuer();
  const embedded = app.oauth.embedded && issuer !== undefined;
  return {
    name: 'adcp-gateway sales agent',
    description: 'AdCP 3.0 and 3.1 sales agent (3.0 unless a call pins adcp_version): products, media buys with seller approval, creatives, delivery, accounts, audiences, catalogs and campaign governance. Send a message with one DataPart { skill, input }; the answer is a Task whose first artifact carries the AdCP response.',
    url: `${origin}${A2A_PATH}`,
    preferredTransport: 'JSONRPC',
    version: '0.1.0',
    protocolVersion: A2A_PROTOCOL_VERSION,
    provider: { organization: 'adcp-gateway', url: origin },
    documentationUrl: `${origin}/docs`,
    capabilities: { streaming: true, pushNotifications: true, stateTransitionHistory: false },
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    skills: toolList().map((tool) => ({
      id: tool.name,
      name: tool.name,
      description: `${tool.description ?? tool.name} Send { skill: "${tool.name}", input: { ... } } as a DataPart.`,
      tags: ['adcp', tool.name === 'call_adcp_agent' || tool.name === 'comply_test_controller' ? 'tooling' : 'media-buy'],
      inputModes: ['application/json'],
      outputModes: ['application/json'],
    })),
    securitySchemes: {
      bearer: { type: 'http', scheme: 'bearer', description: 'An sk_ API key, or an OAuth access token for this agent.' },
      ...(embedded
        ? {
            oauth2: {
              type: 'oauth2' as const,
              description: "The gateway's own authorization server (authorization code with PKCE).",
              oauth2MetadataUrl: `${origin}/.well-known/oauth-authorization-server`,
              flows: { authorizationCode: { authorizationUrl: `${origin}/authorize`, tokenUrl: `${origin}/token`, scopes: {} } },
            },
          }
        : {}),
    },
    security: [{ bearer: [] }, ...(embedded ? [{ oauth2: [] }] : [])],
  };
}
