type Obj = Record<string, unknown>;

/**
 * Keys that carry authentication or trust material, at any depth of a task's arguments (AdCP 3.1
 * "Credential placement", L2/authentication.mdx: `<platform>_access_token`, `api_key`,
 * `client_secret`, `bearer`, `authorization`, `jwk`, `jwks`, `jwks_uri`). A buyer authenticates
 * on the transport; such a key in the payload is a credential that would be logged and echoed.
 */
const CREDENTIAL_KEY = /^(?:(?:[a-z0-9]+[_-])*access[_-]?token|api[_-]?key|client[_-]?secret|bearer|authorization|jwks?|jwks[_-]?uri)$/i;

/**
 * Where credentials are the point, not a smuggling: a webhook registration's `authentication`
 * configures how this seller signs its callbacks to the buyer (the spec's explicit carve-out),
 * and a governance agent's `authentication` how it calls that agent.
 */
const CARVED_OUT = new Set(['push_notification_config', 'authentication']);

/** The path (`context.api_key`) of the first credential-bearing key in `args`, if any. */
export function credentialInArgs(args: unknown, path = ''): string | undefined {
  if (Array.isArray(args)) {
    for (let i = 0; i < args.length; i++) {
      const found = credentialInArgs(args[i], `${path}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (args === null || typeof args !== 'object') return undefined;
  for (const [key, value] of Object.entries(args as Obj)) {
    const at = path ? `${path}.${key}` : key;
    if (CREDENTIAL_KEY.test(key) && value !== undefined && value !== null && value !== '') return at;
    if (CARVED_OUT.has(key)) continue;
    const found = credentialInArgs(value, at);
    if (found) return found;
  }
  return undefined;
}
