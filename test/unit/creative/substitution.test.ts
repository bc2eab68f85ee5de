import { encodeUnreserved, substitute } from '../../../src/application/tasks/build-tasks';

const item = (sku: string) => ({ item_id: 'x', sku });

/**
 * AdCP's catalog-item macro substitution safety (docs/creative/universal-macros): a value put into
 * a URL is percent-encoded so only RFC 3986 unreserved characters stay as they are, and a value
 * that looks like a macro is never expanded again. Vectors from AdCP's
 * catalog-macro-substitution fixture.
 */
describe('catalog-item macro substitution', () => {
  const t = 'https://track.example/imp?sku={SKU}';
  it.each([
    ['reserved-character breakout', '00013&cmd=drop', 'https://track.example/imp?sku=00013%26cmd%3Ddrop'],
    ['nested expansion preserved as literal', 'vacancy-{DEVICE_ID}-42', 'https://track.example/imp?sku=vacancy-%7BDEVICE_ID%7D-42'],
    ['non-ASCII UTF-8', 'café-amsterdam', 'https://track.example/imp?sku=caf%C3%A9-amsterdam'],
    ['CRLF injection', 'a\r\nSet-Cookie: x=1', 'https://track.example/imp?sku=a%0D%0ASet-Cookie%3A%20x%3D1'],
    ['bidi override', 'abc\u202Edef', 'https://track.example/imp?sku=abc%E2%80%AEdef'],
    ['sub-delims encodeURIComponent leaves', "it's(*)!", 'https://track.example/imp?sku=it%27s%28%2A%29%21'],
    ['scheme injection', 'javascript:alert(1)', 'https://track.example/imp?sku=javascript%3Aalert%281%29'],
  ])('%s', (_name, sku, expected) => {
    expect(substitute(t, item(sku), undefined, {})).toBe(expected);
  });

  it('fills item macros from the item, others from macro_values, and leaves unknown ones for the ad server', () => {
    const out = substitute('https://t.example/?s={SKU}&g={GTIN}&c={CONTENT_ID}&mb={MEDIA_BUY_ID}&cb={CACHEBUSTER}', { item_id: 'i1', sku: 's 1', gtin: '0001', mpn: 'm/9' }, 'mpn', { MEDIA_BUY_ID: 'mb_1' });
    expect(out).toBe('https://t.example/?s=s%201&g=0001&c=m%2F9&mb=mb_1&cb={CACHEBUSTER}');
    // A macro_values value that names a macro stays literal too.
    expect(substitute('{A}{B}', undefined, undefined, { A: '{B}', B: 'b' })).toBe('%7BB%7Db');
    expect(encodeUnreserved('A-Z_a.z~0')).toBe('A-Z_a.z~0');
  });
});
