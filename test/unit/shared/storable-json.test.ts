import { parseFetchedJson, parseStorableJson, UnstorableJsonError } from '../../../src/shared/storable-json';

describe('parseStorableJson', () => {
  it('parses JSON a counterparty may send, paired surrogates and escaped backslashes included', () => {
    expect(parseStorableJson('{"a":"\\ud83d\\ude00","b":"\\\\u0000","c":[[[1]]]}')).toEqual({ a: '\ud83d\ude00', b: '\\u0000', c: [[[1]]] });
  });
  it('refuses NUL, unpaired surrogates (in values or keys) and nesting past 64 levels as UnstorableJsonError', () => {
    for (const text of ['{"a":"x\\u0000"}', '{"a":"\\ud800"}', '{"\\udc00":1}', `${'['.repeat(65)}${']'.repeat(65)}`]) {
      expect(() => parseStorableJson(text)).toThrow(UnstorableJsonError);
    }
    expect(() => parseStorableJson(`${'['.repeat(64)}${']'.repeat(64)}`)).not.toThrow();
  });
  it('throws a plain SyntaxError for text that is not JSON', () => {
    let caught: unknown;
    try {
      parseStorableJson('<html>');
    } catch (err) {
      caught = err;
    }
    expect({ syntax: caught instanceof SyntaxError, unstorable: caught instanceof UnstorableJsonError }).toEqual({ syntax: true, unstorable: false });
  });
});

describe('parseFetchedJson', () => {
  const refusal = (bytes: Uint8Array) => {
    try {
      parseFetchedJson(bytes);
    } catch (err) {
      return { unstorable: err instanceof UnstorableJsonError, message: (err as Error).message };
    }
    return undefined;
  };
  it('parses UTF-8 JSON: multi-byte characters, and one key in two different objects', () => {
    expect(parseFetchedJson(Buffer.from('{"n":"Café ☕ 😀","o":{"n":1,"\\u006d":2}}'))).toEqual({ n: 'Café ☕ 😀', o: { n: 1, m: 2 } });
  });
  it('refuses what the webhook receiver refuses in a body: a key twice in one object (escaped or not), bytes that are not UTF-8', () => {
    expect(refusal(Buffer.from('{"a":1,"b":{"c":1,"c":2}}'))).toEqual({ unstorable: true, message: 'has the key "c" more than once in one object' });
    expect(refusal(Buffer.from('{"a":1,"\\u0061":2}'))).toEqual({ unstorable: true, message: 'has the key "a" more than once in one object' });
    expect(refusal(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d]))).toEqual({ unstorable: true, message: 'is not valid UTF-8' });
    // An overlong encoding of "/" and a lone surrogate encoded as UTF-8 are not UTF-8 either.
    expect(refusal(Buffer.from([0x22, 0xc0, 0xaf, 0x22]))).toEqual({ unstorable: true, message: 'is not valid UTF-8' });
    expect(refusal(Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22]))).toEqual({ unstorable: true, message: 'is not valid UTF-8' });
  });
  it('keeps parseStorableJson’s refusals, and a leading byte-order mark is not JSON (as in a received body)', () => {
    expect(refusal(Buffer.from('{"a":"x\\u0000"}'))).toEqual({ unstorable: true, message: 'contains U+0000 (NUL) or an unpaired surrogate' });
    expect(refusal(Buffer.from('\ufeff{}'))).toMatchObject({ unstorable: false });
  });
});
