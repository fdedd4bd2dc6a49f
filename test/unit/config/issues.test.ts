/** Config error messages: the "did you mean" hint, worded zod issues and one "path: message" line per problem. */
import { z } from 'zod';
import { closestKey, formatIssues, issueMessage, unknownKeysMessage } from '../../../lib/config/issues';

/** The formatted problems of `input` against `schema`, parsed the way the config schema does it. */
function problemsOf(schema: z.ZodType, input: unknown): string[] {
  const result = schema.safeParse(input, { error: issueMessage, reportInput: true });
  if (result.success) throw new Error('expected the input to be rejected');
  return formatIssues(result.error.issues);
}

describe('closestKey', () => {
  const known = ['ledgerTable', 'maxRatePerPartition', 'streams'];

  it.each([
    ['a typo', 'maxRatePerPartion', 'maxRatePerPartition'],
    ['a different case', 'STREAMS', 'streams'],
    ['a truncated key', 'ledger', 'ledgerTable'],
    ['a key with extra characters', 'streamsX', 'streams'],
  ])('suggests the intended key for %s', (_name, typed, meant) => {
    expect(closestKey(typed, known)).toBe(meant);
  });

  it('suggests nothing for a key unlike any known one', () => {
    expect(closestKey('region', known)).toBeUndefined();
    expect(closestKey('anything', [])).toBeUndefined();
  });

  it('does not treat a two-letter prefix as a truncation', () => {
    expect(closestKey('le', ['ledgerTable'])).toBeUndefined();
  });
});

describe('unknownKeysMessage', () => {
  it('gives one line per key, in order, with a hint where one is plausible', () => {
    expect(unknownKeysMessage(['streem', 'zzz'], ['streams']).split('\n')).toEqual([
      'unknown key (did you mean "streams"?)',
      'unknown key',
    ]);
  });
});

describe('formatIssues', () => {
  const stream = z.strictObject(
    { id: z.string().min(1), brokers: z.array(z.string()).min(1), rate: z.number().max(10) },
    { error: (iss) => (iss.code === 'unrecognized_keys' ? unknownKeysMessage(iss.keys, ['id', 'brokers', 'rate']) : undefined) },
  );
  const config = z.object({ streams: z.array(stream), topics: z.record(z.string(), z.number()) });

  it('names each path, keeps the problems of one list entry together and words them for people', () => {
    expect(
      problemsOf(config, {
        streams: [
          { id: 'a', brokers: ['b'], rate: 1 },
          { id: '', brokers: [], rate: 11, rat: 1 },
        ],
        topics: { 'my.topic': 'x' },
      }),
    ).toEqual([
      'topics["my.topic"]: expected a number, got a string',
      'streams[1].id: must not be empty',
      'streams[1].brokers: must not be empty',
      'streams[1].rate: must be <= 10',
      'streams[1].rat: unknown key (did you mean "rate"?)',
    ]);
  });

  it('reports a missing value as required and a wrong top-level type without a path', () => {
    expect(problemsOf(config, { topics: {} })).toEqual(['streams: is required']);
    expect(problemsOf(config, [])).toEqual(['expected an object, got a list']);
  });

  it('reports the problems of the union form that was evidently meant, else that no form matches', () => {
    const secret = z.union([z.strictObject({ secretArn: z.string() }), z.strictObject({ env: z.string() })]);
    expect(problemsOf(z.object({ password: secret }), { password: { secretArn: 5 } })).toEqual([
      'password.secretArn: expected a string, got a number',
    ]);
    expect(problemsOf(z.object({ password: secret }), { password: {} })).toEqual(['password: does not match any allowed form']);
  });
});
