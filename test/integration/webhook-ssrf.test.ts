import { WebhookPoster } from '../../src/webhooks/http-poster';
import { assertDeliverableUrl } from '../../src/shared/url-guard';
import { startReceiver } from '../support/receiver';

describe('webhook SSRF guard', () => {
  it.each([
    ['http://93.184.216.34/hook', /https/],
    ['https://127.0.0.1/hook', /non-public/],
    ['https://[::1]/hook', /non-public/],
    ['https://10.1.2.3/hook', /non-public/],
    ['https://169.254.169.254/latest/meta-data', /non-public/],
    ['https://100.64.0.1/hook', /non-public/],
    ['https://user:pw@93.184.216.34/hook', /credentials/],
    ['https://example..com/hook', /cannot be signed/],
    ['not a url', /valid absolute URL/],
  ])('refuses %s at registration', async (url, why) => {
    await expect(assertDeliverableUrl(url, 'push_notification_config.url', false)).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
      field: 'push_notification_config.url',
      message: expect.stringMatching(why),
    });
  });

  it('accepts a public https address, and loopback only through ALLOW_PRIVATE_WEBHOOK_URLS', async () => {
    await expect(assertDeliverableUrl('https://93.184.216.34/hook', 'f', false)).resolves.toBeUndefined();
    await expect(assertDeliverableUrl('http://127.0.0.1:9/hook', 'f', true)).resolves.toBeUndefined();
  });

  it('refuses a loopback address at connect time (also behind a name), terminally, and sends nothing', async () => {
    const receiver = await startReceiver();
    const poster = new WebhookPoster({ allowPrivate: false });
    try {
      for (const url of [`${receiver.origin}/hook`, receiver.origin.replace('127.0.0.1', 'localhost') + '/hook']) {
        const o = await poster.post(url, { 'content-type': 'application/json' }, Buffer.from('{}'));
        expect(o).toMatchObject({ status: 'connection_error', http_status_code: null, terminal: true, error_message: expect.stringContaining('non-public') });
      }
      expect(receiver.received).toHaveLength(0);
    } finally {
      poster.close();
      await receiver.close();
    }
  });

  it('does not follow redirects, and reads Retry-After', async () => {
    const receiver = await startReceiver((w) => (w.path === '/moved' ? 302 : 429));
    const poster = new WebhookPoster({ allowPrivate: true });
    try {
      expect(await poster.post(`${receiver.origin}/moved`, {}, Buffer.from('{}'))).toMatchObject({ status: 'failed', http_status_code: 302 });
      expect(receiver.received).toHaveLength(1);
    } finally {
      poster.close();
      await receiver.close();
    }
  });
});
