import { AppError } from '../../../src/shared/errors';
import { requestRules30 } from '../../../src/wire/request-rules';
import { adcp31 as codec31 } from '../../../src/wire/adcp31/answers';
import { credentialInArgs } from '../../../src/wire/adcp31/credentials-in-args';
import { requestRules31 } from '../../../src/wire/adcp31/requests';
import { adcp31 } from '../../support/adcp31';

const SECRET = 'sk_live_9f8e7d6c5b4a3f2e1d0c';

/** The AppError a release's request rules refuse `args` with, if any. */
function refusal(check: (tool: string, args: Record<string, unknown>) => void, tool: string, args: Record<string, unknown>): AppError | undefined {
  try {
    check(tool, args);
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  return undefined;
}

/**
 * AdCP 3.1's credential placement: authentication or trust material in a task's arguments, at any
 * depth, is refused CREDENTIAL_IN_ARGS (terminal), naming the path and never the value; a webhook
 * registration's and a governance agent's `authentication` are the spec's carve-outs; 3.0 callers
 * are refused nothing new.
 */
describe('CREDENTIAL_IN_ARGS (AdCP 3.1)', () => {
  it.each([
    [{ api_key: SECRET, brief: 'x' }, 'api_key'],
    [{ context: { credentials: { Authorization: `Bearer ${SECRET}` } } }, 'context.credentials.Authorization'],
    [{ ext: { meta_access_token: SECRET } }, 'ext.meta_access_token'],
    [{ packages: [{ product_id: 'p' }, { ext: { client_secret: SECRET } }] }, 'packages[1].ext.client_secret'],
    [{ creative: { jwks_uri: 'https://evil.example/jwks' } }, 'creative.jwks_uri'],
    [{ bearer: SECRET }, 'bearer'],
  ])('finds %j at %s', (args, path) => {
    expect(credentialInArgs(args)).toBe(path);
  });

  it.each([
    [{ push_notification_config: { url: 'https://buyer.example/hook', token: 'a-webhook-token-0123456789', authentication: { schemes: ['Bearer'], credentials: SECRET } } }],
    [{ accounts: [{ account: { account_id: 'a' }, governance_agents: [{ url: 'https://gov.example/mcp', authentication: { schemes: ['Bearer'], credentials: SECRET } }] }] }],
    [{ brief: 'api_key and bearer are words a brief may use', context: { correlation_id: 'c-1' }, idempotency_key: 'k'.repeat(20) }],
    [{ ext: { api_key: '' } }],
  ])('leaves %j alone', (args) => {
    expect(credentialInArgs(args)).toBeUndefined();
  });

  it('a 3.1 request carrying one is refused CREDENTIAL_IN_ARGS, terminal, naming the path and not the value; 3.0 refuses nothing new', () => {
    const args = { buying_mode: 'brief', brief: 'sports', context: { api_key: SECRET } };
    expect(refusal(requestRules30.check, 'get_products', args)).toBeUndefined();
    const err = refusal(requestRules31.check, 'get_products', args)!;
    expect(err).toBeInstanceOf(AppError);
    const error = codec31.error('get_products', args, err);
    expect(error).toMatchObject({ code: 'CREDENTIAL_IN_ARGS', recovery: 'terminal', field: 'context.api_key' });
    expect(JSON.stringify(error)).not.toContain(SECRET.slice(0, 8));
    const v = adcp31().validate('core/error.json', error);
    expect(v.errors).toEqual([]);
  });
});
