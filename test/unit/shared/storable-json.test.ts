import { parseStorableJson, UnstorableJsonError } from '../../../src/shared/storable-json';

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
