/**
 * `npm start -- --config <file>` (runConfigFile) on the real broker and the DynamoDB emulator: the
 * ledger and a declared sink table are created with the declared key, a range that is parked ends a
 * bounded run with exit 1 naming it, and a sink table named without a key must exist.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeTableCommand, ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { runConfigFile, type RunConfigOptions, type RunConfigSummary } from '../../lib/local/run-config';
import { createSinkTable } from '../../lib/sink/table.dynamodb';
import { createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';

const ddb = testDynamo();
const kafka = testKafka('run-config-test');
const admin = kafka.admin();
const producer = kafka.producer({ allowAutoTopicCreation: false });
const dir = mkdtempSync(join(tmpdir(), 'run-config-'));

beforeAll(async () => {
  await Promise.all([admin.connect(), producer.connect()]);
});
afterAll(async () => {
  await Promise.all([admin.disconnect(), producer.disconnect()]);
  ddb.destroy();
  rmSync(dir, { recursive: true, force: true });
});

async function topicWith(records: number): Promise<string> {
  const topic = uniqueName('run-config');
  await createTopicsReady(admin, [{ topic, numPartitions: 2 }]);
  await producer.send({ topic, messages: Array.from({ length: records }, (_, i) => ({ key: `k${i % 5}`, value: String(i) })) });
  return topic;
}

function configFile(stream: Record<string, unknown>): string {
  const file = join(dir, `${uniqueName('streams')}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      ledgerTable: uniqueName('run-config-ledger'),
      streams: [
        {
          id: 'byo',
          kafka: { brokers: ['not-used.example.com:9092'] },
          triggerIntervalMs: 1000,
          processor: { timeoutMs: 30_000 },
          ...stream,
        },
      ],
    }),
  );
  return file;
}

const ledgerOf = (file: string): string => (JSON.parse(readFileSync(file, 'utf8')) as { ledgerTable: string }).ledgerTable;

async function tableExists(name: string): Promise<boolean> {
  try {
    await ddb.send(new DescribeTableCommand({ TableName: name }));
    return true;
  } catch (err) {
    if (err instanceof ResourceNotFoundException) return false;
    throw err;
  }
}

async function run(
  file: string,
  over: Partial<RunConfigOptions> = {},
): Promise<{ exitCode: number; summary: RunConfigSummary; out: string; err: string }> {
  let out = '';
  let err = '';
  const res = await runConfigFile(
    { configFile: file, untilCaughtUp: true, json: true, progress: 'off', timeoutMs: 30_000, maxConcurrency: 16, ...over },
    {
      kafkaBrokers: process.env.KAFKA_BROKERS!,
      dynamodbEndpoint: process.env.DYNAMODB_ENDPOINT!,
      env: process.env,
      out: (s) => (out += s),
      err: (s) => (err += s),
    },
  );
  return { ...res, out, err };
}

describe('npm start -- --config <file>', () => {
  it('creates the ledger and the declared sink table with its key, and exits 0 once caught up', async () => {
    const topic = await topicWith(40);
    const sink = uniqueName('byo-counts');
    writeFileSync(
      join(dir, 'counts.ts'),
      `export default { mode: 'dynamodb-exactly-once', handle: (rs: Array<{ key: Buffer }>) => rs.map((r) => ({ update: { key: { id: String(r.key), day: 1 }, expression: 'ADD n :one', values: { ':one': 1 } } })) };\n`,
    );
    const file = configFile({
      topics: [topic],
      handler: {
        module: './counts.ts',
        mode: 'dynamodb-exactly-once',
        sinkTable: { name: sink, key: { partitionKey: 'id', sortKey: { name: 'day', type: 'N' } } },
      },
    });
    const res = await run(file);
    expect(res.exitCode).toBe(0);
    expect(res.summary).toMatchObject({ caughtUp: true, records: 40, sinkTablesCreated: [sink], parked: [], lag: 0 });
    expect(JSON.parse(res.out.trim().split('\n').pop() as string)).toEqual(res.summary);
    const table = await ddb.send(new DescribeTableCommand({ TableName: sink }));
    expect(table.Table?.KeySchema).toEqual([
      { AttributeName: 'id', KeyType: 'HASH' },
      { AttributeName: 'day', KeyType: 'RANGE' },
    ]);
  });

  it('exits 1 naming the range a poison record parked', async () => {
    const topic = await topicWith(6);
    writeFileSync(join(dir, 'poison.js'), `exports.handler = { mode: 'at-least-once', handle() { throw new Error('always fails'); } };\n`);
    const file = configFile({
      topics: [topic],
      maxAttempts: 1,
      poisonPolicy: 'stop-partition',
      handler: { module: './poison.js', mode: 'at-least-once' },
    });
    const res = await run(file, { progress: 'lines' });
    expect(res.exitCode).toBe(1);
    expect(res.summary.caughtUp).toBe(false);
    expect(res.summary.parked.length).toBeGreaterThanOrEqual(1);
    expect(res.summary.parked[0]).toMatch(new RegExp(`^byo ${topic}/\\d \\[0, \\d+\\): .*always fails`));
    // The summary's lag is the ledger's at exit (what `status` shows now), not the watch's last look.
    const ledger = createDynamoLedger({ client: ddb, tableName: ledgerOf(file) });
    const committed = new Map((await ledger.readPartitions('byo')).map((p) => [p.partition, p.committed]));
    const latest = await admin.fetchTopicOffsets(topic);
    expect(res.summary.lag).toBe(latest.reduce((n, o) => n + Number(o.high) - (committed.get(o.partition) ?? Number(o.low)), 0));
    // A config run produces nothing: its progress lines claim no produced records.
    expect(res.err).toMatch(/until caught up: latest=6 /);
    expect(res.err).not.toMatch(/produced=/);
  });

  it('names a listed topic Kafka does not have, once, and gives up saying there was no partition to read', async () => {
    const topic = uniqueName('no-such-topic');
    const file = configFile({ topics: [topic], handler: { module: 'noop', mode: 'at-least-once' } });
    // Progress as log lines (what `npm start` prints when stdout is not a terminal), events included.
    const res = await run(file, { timeoutMs: 3000, progress: 'lines' });
    expect(res.exitCode).toBe(1);
    expect(res.summary).toMatchObject({ caughtUp: false, partitions: 0, records: 0 });
    expect(res.summary.plannerRuns).toBeGreaterThanOrEqual(2);
    const warning = `byo: topic ${topic} of stream byo does not exist in Kafka (topics in the stream config)`;
    expect(res.err.split(warning).length - 1).toBe(1);
    expect(res.err).toContain(`gave up: no partition to read after 3.0s (topic ${topic} of stream byo does not exist in Kafka`);
  });

  it('refuses a sink table named without a key that does not exist, before creating anything', async () => {
    const topic = await topicWith(1);
    const missing = uniqueName('no-such-sink');
    const file = configFile({ topics: [topic], handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: missing } });
    await expect(run(file)).rejects.toThrow(
      `sink table ${missing} (stream byo) does not exist: create it, or declare it in handler.sinkTable as { "name": "${missing}", "key": { "partitionKey": "pk" } } to have it created`,
    );
    expect(await tableExists(ledgerOf(file))).toBe(false);
  });

  it('refuses a declared sink table that exists with another key, before creating anything', async () => {
    const topic = await topicWith(1);
    const sink = uniqueName('other-key-sink');
    await createSinkTable(ddb, sink);
    const file = configFile({
      topics: [topic],
      handler: {
        module: 'running-totals',
        mode: 'dynamodb-exactly-once',
        sinkTable: { name: sink, key: { partitionKey: 'id', sortKey: { name: 'day', type: 'N' } } },
      },
    });
    await expect(run(file)).rejects.toThrow(
      `sink table ${sink} exists with the key pk (S), but handler.sinkTable declares id (S), day (N): declare the table's key, or name another table`,
    );
    expect(await tableExists(ledgerOf(file))).toBe(false);
  });
});

describe('npm start -- --config <file> with a bad handler module', () => {
  it('fails naming the stream and the file, and creates no table', async () => {
    const topic = await topicWith(1);
    const sink = uniqueName('never-created');
    const file = configFile({
      topics: [topic],
      handler: { module: './missing-handler.ts', mode: 'dynamodb-exactly-once', sinkTable: { name: sink, key: { partitionKey: 'pk' } } },
    });
    await expect(run(file)).rejects.toThrow(
      `stream byo: handler.module "./missing-handler.ts" (${join(dir, 'missing-handler.ts')}): no such file`,
    );
    await expect(ddb.send(new DescribeTableCommand({ TableName: sink }))).rejects.toThrow(/not found|ResourceNotFound/i);
  });
});
