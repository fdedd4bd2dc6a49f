/** The DynamoDB codec's dead-letter items: headers as an ordered list, and items stored in the earlier map shape. */
import { codec } from '../../../lib/ledger/items.dynamodb';
import type { DeadLetter } from '../../../lib/ports/ledger-state';

const base: DeadLetter = {
  stream: 's',
  topic: 't',
  partition: 0,
  offset: 7,
  timestampMs: 5,
  timestampType: 'CreateTime',
  keyBase64: null,
  valueBase64: 'eA==',
  valueBytes: 1,
  truncated: false,
  headers: [],
  error: 'bad',
  attempts: 3,
  rangeFrom: 0,
  createdAtMs: 1000,
  kept: 'record',
};

describe('dead-letter codec', () => {
  it('round-trips headers in order, with nulls and Object.prototype names', () => {
    const headers = [
      { key: 'constructor', valueBase64: 'Yw==' },
      { key: 'a', valueBase64: null },
      { key: '__proto__', valueBase64: 'cA==' },
      { key: 'a', valueBase64: 'Mg==' },
    ];
    const item = codec.deadLetterItem({ ...base, headers });
    expect(codec.deadLetterFromItem(item)).toEqual({ ...base, headers });
  });

  it("reads a dead letter stored as `name -> comma-separated base64 values`, each name's values in order", () => {
    const { headers: _h, ...rest } = base;
    const item = { ...codec.deadLetterItem(base), ...rest, headers: { trace: 'YWJj', multi: 'MQ==,Mg==' } };
    expect(codec.deadLetterFromItem(item).headers).toEqual([
      { key: 'trace', valueBase64: 'YWJj' },
      { key: 'multi', valueBase64: 'MQ==' },
      { key: 'multi', valueBase64: 'Mg==' },
    ]);
  });
});
