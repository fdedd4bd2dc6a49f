/** The failure record a destination receives: Lambda's sections, the payload when it fits, a reference when not, never a payload when only coordinates are kept. */
import { buildDelivery, failureObjectKey, type FailureRecord } from '../../../lib/destinations/message';
import type { DeadLetter } from '../../../lib/ports/ledger-state';

const letter = (over: Partial<DeadLetter> = {}): DeadLetter => ({
  stream: 'orders',
  topic: 'payments',
  partition: 3,
  offset: 42,
  timestampMs: Date.UTC(2025, 0, 2, 3, 4, 5),
  timestampType: 'LogAppendTime',
  keyBase64: Buffer.from('acct-1').toString('base64'),
  valueBase64: Buffer.from('{"amount":1}').toString('base64'),
  valueBytes: 12,
  truncated: false,
  headers: [
    { key: 'h', valueBase64: Buffer.from('1').toString('base64') },
    { key: 'h', valueBase64: null },
  ],
  error: 'handler rejected payments/3/42 3 times: Error: boom',
  cause: 'handler',
  attempts: 3,
  rangeFrom: 40,
  createdAtMs: Date.UTC(2025, 0, 2, 3, 5, 0),
  kept: 'record',
  deliveries: ['s3', 'sqs'],
  ...over,
});
const input = (over: Partial<DeadLetter> = {}, record?: Parameters<typeof buildDelivery>[0]['record']) => ({
  letter: letter(over),
  record,
  bootstrapServers: ['b-1:9092', 'b-2:9092'],
});
const parse = (body: string) => JSON.parse(body) as FailureRecord;

describe('failure record', () => {
  it("carries Lambda's sections, the dead letter and the record in Lambda's event shape", () => {
    const d = buildDelivery(input(), { kind: 'sqs', maxBodyBytes: 262_144 - 1024 });
    expect(d.idempotencyKey).toBe('payments/3/42');
    expect(d.stream).toBe('orders');
    expect(d.key).toEqual(Buffer.from('acct-1'));
    expect(d.objectKey).toBe('orders/payments/000003/00000000000000000042.json');
    expect(d.groupId).toBe('orders/payments/3');
    expect(d.deduplicationId).toMatch(/^[0-9a-f]{64}$/);
    const m = parse(d.body);
    expect(m).toMatchObject({
      version: '1.0',
      timestamp: '2025-01-02T03:05:00.000Z',
      requestContext: { requestId: 'payments/3/42', condition: 'RetryAttemptsExhausted', approximateInvokeCount: 3 },
      responseContext: { functionError: 'Unhandled', errorMessage: 'handler rejected payments/3/42 3 times: Error: boom' },
      KafkaBatchInfo: {
        batchSize: 1,
        bootstrapServers: 'b-1:9092,b-2:9092',
        recordInfo: { topic: 'payments', partition: 3, offset: '42', timestamp: '2025-01-02T03:04:05.000Z' },
      },
      deadLetter: {
        stream: 'orders',
        topic: 'payments',
        partition: 3,
        offset: 42,
        idempotencyKey: 'payments/3/42',
        cause: 'handler',
        attempts: 3,
        timestampMs: Date.UTC(2025, 0, 2, 3, 4, 5),
        timestampType: 'LogAppendTime',
        deadLetteredAtMs: Date.UTC(2025, 0, 2, 3, 5, 0),
        rangeFrom: 40,
        kept: 'record',
        valueBytes: 12,
      },
    });
    expect(m.payload).toEqual({
      records: {
        'payments-3': [
          {
            topic: 'payments',
            partition: 3,
            offset: 42,
            timestamp: Date.UTC(2025, 0, 2, 3, 4, 5),
            timestampType: 'LOG_APPEND_TIME',
            key: Buffer.from('acct-1').toString('base64'),
            value: Buffer.from('{"amount":1}').toString('base64'),
            headers: [
              { key: 'h', value: 'MQ==' },
              { key: 'h', value: null },
            ],
          },
        ],
      },
    });
    expect(m.KafkaBatchInfo.payloadSize).toBe(Buffer.byteLength(JSON.stringify(m.payload)));
    expect(m.payloadRef).toBeUndefined();
  });

  it('names the cause of a record a stage rejected, and the incarnation in keys', () => {
    const expired = parse(buildDelivery(input({ cause: 'expired', attempts: 0 }), { kind: 'sns' }).body);
    expect(expired.requestContext.condition).toBe('MaximumRecordAgeExceeded');
    expect(expired.responseContext.functionError).toBeNull();
    expect(parse(buildDelivery(input({ cause: 'undecodable' }), { kind: 'sns' }).body).requestContext.condition).toBe('RecordUndecodable');
    const d = buildDelivery(input({ incarnation: 2 }), { kind: 's3', s3: { bucket: 'b', prefix: 'dl/' } });
    expect(d.idempotencyKey).toBe('payments/3/42#2');
    expect(d.objectKey).toBe('dl/orders/payments~0002/000003/00000000000000000042.json');
    expect(parse(d.body).deadLetter.incarnation).toBe(2);
  });

  it('holds the record whole from the record as read, even where the ledger copy was cut', () => {
    const value = Buffer.alloc(300 * 1024, 7);
    const record = { key: Buffer.from('k'), value, headers: [{ key: 'x', value: null }] };
    const cut = { truncated: true, valueBase64: value.subarray(0, 200 * 1024).toString('base64'), valueBytes: value.length };
    const s3 = parse(buildDelivery(input(cut, record), { kind: 's3' }).body);
    const [one] = s3.payload!.records['payments-3']!;
    expect(Buffer.from(one!.value!, 'base64').equals(value)).toBe(true);
    expect(s3.payload!.truncated).toBeUndefined();
    // A retry works from the ledger's copy: it says the copy was cut.
    const retried = parse(buildDelivery(input(cut), { kind: 's3' }).body);
    expect(retried.payload!.truncated).toBe(true);
    expect(Buffer.from(retried.payload!.records['payments-3']![0]!.value!, 'base64')).toHaveLength(200 * 1024);
  });

  it('replaces a payload over the destination limit by a reference: the S3 object when configured, else the dead letter', () => {
    const record = { key: null, value: Buffer.alloc(250 * 1024, 1), headers: [] };
    const limit = 262_144 - 1024;
    const s3 = { bucket: 'dead-letters', prefix: 'dl/' };
    const withS3 = buildDelivery(input({}, record), { kind: 'sqs', maxBodyBytes: limit, s3 });
    expect(Buffer.byteLength(withS3.body)).toBeLessThanOrEqual(limit);
    const m = parse(withS3.body);
    expect(m.payload).toBeUndefined();
    expect(m.payloadRef).toEqual({
      s3: { bucket: 'dead-letters', key: 'dl/orders/payments/000003/00000000000000000042.json' },
      deadLetter: { stream: 'orders', topic: 'payments', partition: 3, offset: 42 },
    });
    expect(m.KafkaBatchInfo.payloadSize).toBeGreaterThan(limit);
    const without = parse(buildDelivery(input({}, record), { kind: 'sns', maxBodyBytes: limit }).body);
    expect(without.payloadRef).toEqual({ deadLetter: { stream: 'orders', topic: 'payments', partition: 3, offset: 42 } });
    // Just under the limit: the payload stays.
    const small = { key: null, value: Buffer.alloc(150 * 1024, 1), headers: [] };
    expect(parse(buildDelivery(input({}, small), { kind: 'sqs', maxBodyBytes: limit }).body).payload).toBeDefined();
  });

  it('puts no key, value or headers anywhere when only coordinates are kept', () => {
    const record = {
      key: Buffer.from('secret-key'),
      value: Buffer.from('secret-value'),
      headers: [{ key: 'pii', value: Buffer.from('x') }],
    };
    const coords = { kept: 'coordinates' as const, keyBase64: null, valueBase64: null, headers: [] };
    for (const kind of ['s3', 'kafka', 'sqs', 'sns'] as const) {
      const d = buildDelivery(input(coords, record), { kind, s3: { bucket: 'b', prefix: '' } });
      const m = parse(d.body);
      expect(m.payload).toBeUndefined();
      expect(m.payloadRef).toBeUndefined();
      expect(m.deadLetter.kept).toBe('coordinates');
      expect(d.body).not.toMatch(/secret|pii|c2VjcmV0/);
      // Kafka partitions by the idempotency key instead of the record's key.
      expect(d.key).toEqual(Buffer.from('payments/3/42'));
    }
  });

  it('derives one object key per dead letter, so a redelivery overwrites it', () => {
    const a = failureObjectKey('p/', letter());
    expect(failureObjectKey('p/', letter({ createdAtMs: 1, attempts: 9 }))).toBe(a);
    expect(failureObjectKey('p/', letter({ offset: 43 }))).not.toBe(a);
    expect(failureObjectKey('p/', letter({ stream: 'other' }))).not.toBe(a);
  });

  it('hashes a FIFO group over 128 characters', () => {
    const d = buildDelivery(input({ topic: 't'.repeat(200) }), { kind: 'sqs' });
    expect(d.groupId).toMatch(/^[0-9a-f]{64}$/);
  });
});
