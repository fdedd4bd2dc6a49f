/**
 * Bad input (issue #7), generated with fast-check: ad hoc payloads for both functions, stream
 * configs and CLI arguments are refused with a ValidationError (or the CLI's usage exit) and change
 * nothing; malformed records (null keys and values, invalid UTF-8, huge headers) end as dead letters
 * on the real broker and emulator, never in a crash loop.
 */
import fc from 'fast-check';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { runCli, EXIT } from '../../lib/cli/program';
import { parseDeploymentConfig, parseStreamConfig, type DeploymentConfig } from '../../lib/config/schema';
import { createRecordingDispatcher } from '../../lib/dispatch/dispatcher.local';
import { ValidationError } from '../../lib/errors';
import { runningTotals } from '../../lib/handlers/running-totals';
import { createMemoryKafka } from '../../lib/kafka/metadata.memory';
import { createMemoryRangeReader } from '../../lib/kafka/range-reader.memory';
import { createMemoryLedger } from '../../lib/ledger/ledger.memory';
import type { OpsContext } from '../../lib/ops/context';
import { parsePlannerPayload } from '../../lib/planner/payload';
import { planStream } from '../../lib/planner/run';
import { parseProcessorPayload } from '../../lib/processor/payload';
import { processRange } from '../../lib/processor/process-range';
import { createMetadataCache } from '../../lib/kafka/metadata-cache';
import { createKafkajsRangeReader } from '../../lib/kafka/range-reader.kafkajs';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { checkInvariants } from './invariants';
import { readLedgerSnapshot } from './snapshot.dynamodb';
import { createSinkTable, createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';

const VALID_STREAM = {
  id: 's1',
  kafka: { brokers: ['localhost:9092'] },
  topics: ['orders'],
  handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: 'totals' },
};
const config: DeploymentConfig = parseDeploymentConfig(
  { ledgerTable: 'ledger', streams: [VALID_STREAM, { ...VALID_STREAM, id: 's2' }] },
  'test',
);

/** Runs `fn`; passes if it returns or throws a ValidationError with a message, fails on anything else. */
function onlyValidationErrors(fn: () => unknown): boolean {
  try {
    fn();
    return true;
  } catch (err) {
    if (!(err instanceof ValidationError))
      throw new Error(`expected a ValidationError, got ${(err as Error)?.name}: ${(err as Error)?.message}`, { cause: err });
    expect(err.message.length).toBeGreaterThan(10);
    return true;
  }
}

/** Values that look almost right: right keys, wrong types and ranges. */
const nasty = fc.oneof(
  fc.anything(),
  fc.constantFrom(
    -1,
    0,
    1,
    1.5,
    NaN,
    Infinity,
    -Infinity,
    2 ** 53,
    '',
    ' ',
    '0',
    'true',
    null,
    undefined,
    [],
    {},
    '__proto__',
    's1',
    'orders',
  ),
  fc.string(),
  fc.integer(),
  fc.double(),
);

describe('bad ad hoc payloads', () => {
  it('the planner refuses anything but {dryRun?, streams?} of known streams with a ValidationError', () => {
    fc.assert(
      fc.property(fc.anything(), (event) => onlyValidationErrors(() => parsePlannerPayload(event, config))),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(fc.record({ dryRun: nasty, streams: fc.oneof(nasty, fc.array(nasty)) }, { requiredKeys: [] }), (event) =>
        onlyValidationErrors(() => parsePlannerPayload(event, config)),
      ),
      { numRuns: 500 },
    );
  });

  it('the processor refuses malformed ranges and peeks with a ValidationError', () => {
    fc.assert(
      fc.property(fc.anything(), (event) => onlyValidationErrors(() => parseProcessorPayload(event, config))),
      { numRuns: 500 },
    );
    const range = fc.record(
      { stream: nasty, topic: nasty, partition: nasty, from: nasty, until: nasty, extra: nasty },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(range, (event) => onlyValidationErrors(() => parseProcessorPayload(event, config))),
      { numRuns: 1000 },
    );
    const peek = fc.record({
      peek: fc.oneof(
        nasty,
        fc.record({ stream: nasty, topic: nasty, partition: nasty, offset: nasty, count: nasty }, { requiredKeys: [] }),
      ),
    });
    fc.assert(
      fc.property(peek, (event) => onlyValidationErrors(() => parseProcessorPayload(event, config))),
      { numRuns: 500 },
    );
  });

  it('a range is accepted only when it is well-formed', () => {
    fc.assert(
      fc.property(fc.nat(), fc.nat(), fc.integer({ min: -2, max: 5 }), (from, until, partition) => {
        const ok = from < until && partition >= 0;
        const run = () => parseProcessorPayload({ stream: 's1', topic: 'orders', partition, from, until }, config);
        if (ok) expect(run()).toMatchObject({ mode: 'range' });
        else expect(run).toThrow(ValidationError);
      }),
    );
  });
});

describe('bad stream configs', () => {
  const keys = [
    'id',
    'kafka',
    'topics',
    'topicPattern',
    'startingOffsets',
    'newTopics',
    'isolationLevel',
    'triggerIntervalMs',
    'maxRatePerPartition',
    'minRatePerPartition',
    'maxOffsetsPerTrigger',
    'minOffsetsPerTrigger',
    'maxTriggerDelayMs',
    'backpressure',
    'processor',
    'split',
    'failOnDataLoss',
    'maxAttempts',
    'handler',
    'poisonPolicy',
    'consumerGroup',
    'onFailure',
    'bogus',
  ];
  it('any value refuses with a ValidationError', () => {
    fc.assert(
      fc.property(fc.anything(), (input) => onlyValidationErrors(() => parseDeploymentConfig(input, 'fuzz'))),
      { numRuns: 300 },
    );
  });

  it('a valid stream with one field replaced by junk parses or refuses with a ValidationError', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...keys),
        nasty,
        fc.constantFrom('timeoutMs', 'leaseMs', 'safetyFactor', 'brokers', 'module', 'sinkTable', 'mode'),
        (key, junk, inner) => {
          const stream: Record<string, unknown> = { ...VALID_STREAM, [key]: junk };
          onlyValidationErrors(() => parseDeploymentConfig({ ledgerTable: 'ledger', streams: [stream] }, 'fuzz'));
          const nested = {
            ...VALID_STREAM,
            processor: { [inner]: junk },
            kafka: { brokers: inner === 'brokers' ? junk : ['h:1'] },
            handler: { ...VALID_STREAM.handler, [inner]: junk },
          };
          return onlyValidationErrors(() => parseStreamConfig(nested, 'fuzz'));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('failure destinations with one field replaced by junk parse or refuse with a ValidationError', () => {
    const valid = {
      sqs: 'arn:aws:sqs:us-east-1:123456789012:q',
      sns: 'arn:aws:sns:us-east-1:123456789012:t',
      s3: { bucket: 'dead-letters', prefix: 'dl/' },
      kafka: { topic: 'dlt', maxMessageBytes: 100_000 },
    };
    fc.assert(
      fc.property(fc.constantFrom('sqs', 'sns', 's3', 'kafka', 'bucket', 'prefix', 'topic', 'maxMessageBytes'), nasty, (field, junk) => {
        const onFailure: Record<string, unknown> = { ...valid };
        if (field === 'bucket' || field === 'prefix') onFailure.s3 = { ...valid.s3, [field]: junk };
        else if (field === 'topic' || field === 'maxMessageBytes') onFailure.kafka = { ...valid.kafka, [field]: junk };
        else onFailure[field] = junk;
        return onlyValidationErrors(() => parseStreamConfig({ ...VALID_STREAM, onFailure }, 'fuzz'));
      }),
      { numRuns: 300 },
    );
  });

  it('deployment-level junk (ledger table, duplicate ids, stream lists) refuses with a ValidationError', () => {
    fc.assert(
      fc.property(nasty, fc.oneof(nasty, fc.array(nasty, { maxLength: 3 })), (ledgerTable, streams) =>
        onlyValidationErrors(() => parseDeploymentConfig({ ledgerTable, streams }, 'fuzz')),
      ),
      { numRuns: 300 },
    );
    expect(() => parseDeploymentConfig({ ledgerTable: 'ledger', streams: [VALID_STREAM, VALID_STREAM] }, 'dup')).toThrow(ValidationError);
  });
});

describe('bad CLI arguments', () => {
  const NOW = Date.parse('2026-05-01T12:00:00Z');
  function fakes() {
    const kafka = createMemoryKafka();
    kafka.createTopic('orders', 2);
    kafka.produce('orders', 0, 30);
    kafka.produce('orders', 1, 20);
    const ledger = createMemoryLedger();
    const reader = createMemoryRangeReader();
    const single = parseDeploymentConfig({ ledgerTable: 'ledger', streams: [VALID_STREAM] }, 'test');
    const ctx: OpsContext = {
      config: single,
      env: {},
      dynamo: {} as DynamoDBClient,
      ledger,
      storeClock: async () => Date.now(),
      metadata: { forStream: async () => kafka, requestCount: () => 0, closeAll: async () => undefined },
      readerFor: async () => reader,
      createReader: async () => reader,
      handlerFor: () => runningTotals,
      close: async () => undefined,
    };
    const contextFor = jest.fn((): OpsContext => ctx);
    return { ledger, kafka, single, contextFor };
  }
  const word = fc.oneof(
    fc.constantFrom(
      's1',
      's2',
      'orders',
      '0',
      '1',
      '-1',
      '1e3',
      'NaN',
      'earliest',
      'latest',
      'now',
      '-1h',
      '2026-13-45',
      'orders/0/5',
      'Bad Name',
      '',
    ),
    fc.constantFrom(
      '--to',
      '--from',
      '--partition',
      '--count',
      '--json',
      '--name',
      '--sink-table',
      '--redrive',
      '--redrive-all',
      '--dry-run',
      '--yes',
      '--bogus',
      '-x',
      '--',
    ),
    fc.string({ maxLength: 12 }),
  );
  const argv = fc
    .tuple(
      fc.constantFrom('status', 'plan', 'peek', 'rewind', 'replay', 'dead-letters', 'frobnicate', '--help', ''),
      fc.array(word, { maxLength: 6 }),
    )
    .map(([c, rest]) => [c, ...rest]);

  it('never throws; usage errors exit 2 before any client exists; refusals leave the ledger as it was', async () => {
    const t = fakes();
    // Some state to protect: a planned range in flight.
    await planStream(
      { ledger: t.ledger, metadataFor: async () => t.kafka, dispatcher: createRecordingDispatcher(), plannerLeaseMs: 1000 },
      t.single.streams[0]!,
      { dryRun: false, nowMs: NOW - 10_000 },
    );
    const exits = new Set<number>(Object.values(EXIT));
    await fc.assert(
      fc.asyncProperty(argv, async (args) => {
        t.contextFor.mockClear();
        const before = JSON.stringify(t.ledger.store('s1'), (_k, v: unknown) => (v instanceof Map ? [...v.entries()] : v));
        const err: string[] = [];
        const code = await runCli(
          args,
          { out: () => undefined, err: (s) => err.push(s) },
          { env: { USER: 'fuzz' }, now: () => NOW, loadConfig: () => ({ config: t.single, env: {} }), contextFor: t.contextFor },
        );
        expect(exits.has(code)).toBe(true);
        // A usage error names the problem (unknown streams are found once the config is loaded).
        if (code === EXIT.usage) expect(err.join('')).toMatch(/\S/);
        if (code !== EXIT.ok) {
          const after = JSON.stringify(t.ledger.store('s1'), (_k, v: unknown) => (v instanceof Map ? [...v.entries()] : v));
          expect(after).toBe(before);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('malformed records on the real broker', () => {
  const ddb = testDynamo();
  const kafka = testKafka('chaos-bad-records');
  const admin = kafka.admin();
  const producer = kafka.producer();
  const metadata = createMetadataCache();
  const reader = createKafkajsRangeReader(kafka);
  const ledgerTable = uniqueName('chaos-bad-ledger');
  const ledger = createDynamoLedger({ client: ddb, tableName: ledgerTable });
  beforeAll(async () => {
    await Promise.all([ensureLedgerTable(ddb, ledgerTable), admin.connect(), producer.connect()]);
  });
  afterAll(async () => {
    await Promise.all([metadata.closeAll(), reader.close(), admin.disconnect(), producer.disconnect()]);
    ddb.destroy();
  });

  async function runOne(messages: Array<{ key: string | null; value: string | Buffer | null; headers?: Record<string, string | Buffer> }>) {
    const id = uniqueName('bad');
    const topic = `${id}-t`;
    await createTopicsReady(admin, [{ topic, numPartitions: 1 }]);
    const sinkTable = await createSinkTable(ddb, 'bad-sink');
    const stream = parseStreamConfig(
      {
        id,
        kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
        topics: [topic],
        handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable },
        maxAttempts: 2,
      },
      'test',
    );
    await producer.send({ topic, messages });
    const dispatcher = createRecordingDispatcher();
    await planStream({ ledger, dispatcher, metadataFor: (s) => metadata.forStream(s), plannerLeaseMs: 60_000 }, stream, {
      dryRun: false,
      nowMs: Date.now(),
    });
    expect(dispatcher.dispatched).toHaveLength(1);
    const range = dispatcher.dispatched[0]!;
    const invoke = () =>
      processRange(
        { ledger, readerFor: async () => reader, handlerFor: () => runningTotals, retryBaseMs: 1 },
        { stream, range, deadlineAtMs: Date.now() + 60_000 },
      );
    return { id, invoke };
  }
  const good = (n: number) => ({ key: `g-${n}`, value: JSON.stringify({ amount: n }) });

  it('null keys, null values, invalid UTF-8, junk amounts and oversized values are dead-lettered; the range finishes', async () => {
    const t = await runOne([
      good(1),
      { key: null, value: JSON.stringify({ amount: 1 }) },
      { key: 'null-value', value: null },
      { key: 'bad-utf8', value: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0xc3, 0x28, 0x7d]) },
      good(2),
      { key: 'big-value', value: Buffer.alloc(600_000, 0x41) },
      { key: 'huge-headers-valid', value: JSON.stringify({ amount: 7 }), headers: { big: Buffer.alloc(300_000, 0xcd) } },
      { key: 'nan', value: JSON.stringify({ amount: 'NaN' }) },
      good(3),
    ]);
    const res = await t.invoke();
    expect(res).toMatchObject({ status: 'done', deadLetters: 5, records: 4 });
    const dls = await ledger.listDeadLetters(t.id);
    expect(dls.map((d) => d.offset).sort((a, b) => a - b)).toEqual([1, 2, 3, 5, 7]);
    expect(dls.find((d) => d.offset === 5)).toMatchObject({ truncated: true, valueBytes: 600_000 });
    expect(checkInvariants(await readLedgerSnapshot(ddb, ledgerTable, t.id))).toEqual([]);
    // Invoked again (a Lambda retry): already done, no crash loop.
    expect((await t.invoke()).status).toBe('already-done');
  }, 60_000);

  // A rejected record whose headers (or key + value) base64-encode past DynamoDB's 400 KB item limit
  // used to be impossible to dead-letter (the range stalled, then was parked); the dead letter is
  // now cut to fit and flagged.
  it('a rejected record with huge headers is dead-lettered, cut to fit and flagged', async () => {
    const t = await runOne([
      good(1),
      { key: 'huge-headers', value: 'not json', headers: { big: Buffer.alloc(300_000, 0xab), more: 'x'.repeat(100_000), small: 'kept' } },
      good(2),
    ]);
    const res = await t.invoke();
    expect(res).toMatchObject({ status: 'done', deadLetters: 1, records: 2 });
    const [dl] = await ledger.listDeadLetters(t.id);
    expect(dl).toMatchObject({ truncated: true, valueBase64: Buffer.from('not json').toString('base64') });
    // 'big' does not fit the 64 KB header budget: it and every header after it are cut, whole and in order.
    expect(dl).toMatchObject({ headers: [], headersDropped: 3 });
  }, 60_000);
});
