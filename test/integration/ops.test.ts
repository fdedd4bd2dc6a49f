/**
 * The operations CLI against the real broker and emulator: status, peek (binary values as base64),
 * dead letters listed and re-driven exactly once, rewind refused while a range is in flight and
 * applied when idle, and a bounded replay into its own sink table.
 */
import { runCli, type CliDeps } from '../../lib/cli/program';
import { parseDeploymentConfig, type StreamConfig } from '../../lib/config/schema';
import { createRecordingDispatcher } from '../../lib/dispatch/dispatcher.local';
import { createSinkTable } from '../../lib/sink/table.dynamodb';
import { scanTotals } from '../../lib/sink/totals.dynamodb';
import { createLocalRunner } from '../../lib/runtime/local';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { createOpsContext, type OpsContext } from '../../lib/ops/context';
import { planStream } from '../../lib/planner/run';
import type { ExactlyOnceHandler } from '../../lib/processor/handler-api';
import { processRange } from '../../lib/processor/process-range';
import { freePort } from '../../infra/local/process';
import { createTopicsReady, testDynamo, testKafka, uniqueName } from '../support/env';

const ddb = testDynamo();
const kafka = testKafka('ops-it');
const admin = kafka.admin();
const producer = kafka.producer();
const id = uniqueName('ops');
const topic = `${id}-payments`;
const sinkTable = uniqueName('ops-totals');
const replaySink = uniqueName('ops-replay');
const ledgerTable = uniqueName('ops-ledger');
const env = { ...process.env, USER: 'ops-tester' };
const config = parseDeploymentConfig(
  {
    ledgerTable,
    streams: [
      {
        id,
        kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') },
        topics: [topic],
        triggerIntervalMs: 1000,
        maxAttempts: 2,
        processor: { timeoutMs: 30_000 },
        handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable },
      },
    ],
  },
  'test',
);
const stream = config.streams[0] as StreamConfig;
let ctx: OpsContext;
const t0 = Date.now();
const BINARY = Buffer.from([0xff, 0xfe, 0x00, 0x01]);
const expected: Record<string, { total: number; count: number }> = {};

/** Runs the CLI in-process against this test's config; returns exit code and output. */
async function cli(argv: string[], over: Partial<CliDeps> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(
    argv,
    { out: (s) => out.push(s), err: (s) => err.push(s) },
    { env, loadConfig: () => ({ config, env }), ...over },
  );
  return { code, out: out.join(''), err: err.join('') };
}

/** Planner and in-process processors until every partition is committed up to its latest offset. */
async function catchUp(): Promise<void> {
  const runner = createLocalRunner(
    {
      ledger: ctx.ledger,
      metadataFor: (s) => ctx.metadata.forStream(s),
      createReader: (s) => ctx.createReader(s),
      handlerFor: (s) => ctx.handlerFor(s),
    },
    [stream],
  );
  try {
    for (let i = 0; i < 30; i++) {
      const [rep] = await runner.planOnce();
      await runner.idle();
      if (rep && rep.partitions.length && rep.partitions.every((p) => p.lag === 0 && p.committed === p.nextFrom)) return;
    }
    throw new Error('did not catch up');
  } finally {
    await runner.stop();
  }
}

beforeAll(async () => {
  await Promise.all([
    ensureLedgerTable(ddb, ledgerTable),
    createSinkTable(ddb, sinkTable),
    createSinkTable(ddb, replaySink),
    admin.connect(),
    producer.connect(),
  ]);
  await createTopicsReady(admin, [{ topic, numPartitions: 2 }]);
  ctx = createOpsContext(config, env);
  const good = Array.from({ length: 60 }, (_, i) => ({ key: `acct-${i % 5}`, amount: (i + 1) * 10, partition: i % 2 }));
  for (const g of good) {
    const e = (expected[g.key] ??= { total: 0, count: 0 });
    e.total += g.amount;
    e.count += 1;
  }
  await producer.send({
    topic,
    messages: good.slice(0, 30).map((g) => ({ key: g.key, value: JSON.stringify({ amount: g.amount }), partition: g.partition })),
  });
  // Two poison records on partition 0 (offsets 15 and 16): not JSON, and not even UTF-8.
  await producer.send({
    topic,
    messages: [
      { key: 'acct-bad', value: 'not json', partition: 0, headers: { trace: 'abc' } },
      { key: 'acct-bad', value: BINARY, partition: 0 },
    ],
  });
  await producer.send({
    topic,
    messages: good.slice(30).map((g) => ({ key: g.key, value: JSON.stringify({ amount: g.amount }), partition: g.partition })),
  });
  await catchUp();
});

afterAll(async () => {
  await ctx?.close();
  await Promise.all([admin.disconnect(), producer.disconnect()]);
  ddb.destroy();
});

describe('operations CLI on the real broker and emulator', () => {
  it('status: committed = latest, lag 0, and the two dead letters on partition 0', async () => {
    const res = await cli(['status', id, '--json']);
    expect(res.code).toBe(0);
    const s = JSON.parse(res.out);
    expect(s.partitions.map((p: Record<string, number>) => [p.partition, p.committed, p.latest, p.lag, p.inFlight, p.deadLetters])).toEqual(
      [
        [0, 32, 32, 0, 0, 2],
        [1, 30, 30, 0, 0, 0],
      ],
    );
    expect(await scanTotals(ddb, sinkTable)).toEqual(expected);
    const table = await cli(['status', id]);
    expect(table.out).toMatch(/total lag 0, ranges in flight 0, failures 0 \(parked 0\), dead letters 2/);
  });

  it('history: the finished ranges tile each partition from 0 to its committed offset', async () => {
    const res = await cli(['history', id, '--since', '-1h', '--json']);
    expect(res.code).toBe(0);
    const ranges = res.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { partition: number; from: number; until: number; status: string; finishedAtMs: number });
    for (const [partition, end] of [
      [0, 32],
      [1, 30],
    ] as const) {
      const mine = ranges.filter((r) => r.partition === partition).sort((a, b) => a.from - b.from);
      expect(mine.every((r) => r.status === 'done' && r.finishedAtMs > 0)).toBe(true);
      expect(mine.map((r) => r.from)).toEqual([0, ...mine.slice(0, -1).map((r) => r.until)]);
      expect(mine.at(-1)?.until).toBe(end);
    }
    expect((await cli(['history', id])).out).toMatch(new RegExp(`^${ranges.length} range\\(s\\) of stream ${id} finished since `));
  });

  it('peek: records through the range reader, binary values as base64, nothing committed', async () => {
    const before = await ctx.ledger.readPartitions(id);
    const res = await cli(['peek', topic, '0', '15', '--count', '3', '--json']);
    expect(res.code).toBe(0);
    const lines = res.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({
      offset: 15,
      key: 'acct-bad',
      value: 'not json',
      headers: [{ key: 'trace', value: 'abc', valueEncoding: 'utf8' }],
      valueEncoding: 'utf8',
    });
    expect(lines[0].timestamp).toBeGreaterThanOrEqual(t0 - 1000);
    expect(lines[1]).toMatchObject({ offset: 16, value: BINARY.toString('base64'), valueEncoding: 'base64' });
    expect(lines[2]).toMatchObject({ offset: 17, key: 'acct-0' });
    expect(await ctx.ledger.readPartitions(id)).toEqual(before);
    expect((await cli(['peek', topic, '0', '999', '--json'])).out).toBe('');
  });

  it('peek refuses a topic outside the stream, though the credentials can read it', async () => {
    const unrelated = `${id}-cards`;
    await createTopicsReady(admin, [{ topic: unrelated }]);
    await producer.send({ topic: unrelated, messages: [{ value: '4111111111111111' }] });
    for (const argv of [
      ['peek', unrelated, '0', '0', '--json'],
      ['peek', unrelated, '0', '0', '--stream', id],
    ]) {
      const res = await cli(argv);
      expect(res.code).toBe(2);
      expect(res.out).toBe('');
      expect(res.err).toMatch(new RegExp(`topic ${unrelated} .*topics ${topic}\\).*peek reads only`));
      expect(res.err).not.toMatch(/4111/);
    }
  });

  it('dead letters: listed, re-driven once with the fixed handler, never twice', async () => {
    const list = await cli(['dead-letters', id, '--json']);
    expect(JSON.parse(list.out).map((d: { offset: number; redrivenAtMs?: number }) => [d.offset, d.redrivenAtMs])).toEqual([
      [15, undefined],
      [16, undefined],
    ]);
    // The handler still rejects them: nothing changes, exit 1.
    const failed = await cli(['dead-letters', id, '--redrive-all', '--json']);
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.out).map((r: { outcome: string; source: string }) => [r.outcome, r.source])).toEqual([
      ['failed', 'kafka'],
      ['failed', 'kafka'],
    ]);
    expect((await scanTotals(ddb, sinkTable))['acct-bad']).toBeUndefined();

    // A fixed handler (deployed after the incident): unreadable payments count with amount 0.
    const fixed: ExactlyOnceHandler = {
      mode: 'dynamodb-exactly-once',
      handle: (records) =>
        records.map((r) => ({
          update: {
            key: { pk: r.key!.toString() },
            expression: 'ADD #t :t, #c :c',
            names: { '#t': 'total', '#c': 'count' },
            values: { ':t': 0, ':c': 1 },
          },
        })),
    };
    const withFix: Partial<CliDeps> = {
      contextFor: (cfg, e) => {
        const c = createOpsContext(cfg, e);
        return { ...c, handlerFor: () => fixed };
      },
    };
    const one = await cli(['dead-letters', id, '--redrive', `${topic}/0/16`, '--json'], withFix);
    expect(one.code).toBe(0);
    expect(JSON.parse(one.out)).toEqual([{ id: `${topic}/0/16`, outcome: 'redriven', source: 'kafka' }]);
    expect((await scanTotals(ddb, sinkTable))['acct-bad']).toEqual({ total: 0, count: 1 });
    const again = await cli(['dead-letters', id, '--redrive', `${topic}/0/16`, '--json'], withFix);
    expect(JSON.parse(again.out)).toEqual([{ id: `${topic}/0/16`, outcome: 'already-redriven' }]);
    const rest = await cli(['dead-letters', id, '--redrive-all', '--json'], withFix);
    expect(JSON.parse(rest.out)).toEqual([{ id: `${topic}/0/15`, outcome: 'redriven', source: 'kafka' }]);
    expect((await cli(['dead-letters', id, '--redrive-all', '--json'], withFix)).out.trim()).toBe('[]');
    expect((await scanTotals(ddb, sinkTable))['acct-bad']).toEqual({ total: 0, count: 2 });
    const status = JSON.parse((await cli(['status', id, '--json'])).out);
    expect(status.totals.deadLetters).toBe(0);
    expect((await cli(['dead-letters', id, '--redrive', `${topic}/0/3`])).code).toBe(2);
  });

  it('rewind: refused while a range is in flight, then applied, recorded, and processed again from the new offset', async () => {
    await producer.send({
      topic,
      messages: Array.from({ length: 10 }, (_, i) => ({ key: 'acct-late', value: JSON.stringify({ amount: i }), partition: 1 })),
    });
    const dispatcher = createRecordingDispatcher();
    await planStream({ ledger: ctx.ledger, metadataFor: (s) => ctx.metadata.forStream(s), dispatcher, plannerLeaseMs: 30_000 }, stream, {
      dryRun: false,
      nowMs: Date.now(),
    });
    expect(dispatcher.dispatched).toEqual([expect.objectContaining({ partition: 1, from: 30, until: 40 })]);
    const before = await ctx.ledger.readPartition(id, topic, 1);

    const refused = await cli(['rewind', id, '--to', 'earliest']);
    expect(refused.code).toBe(3);
    expect(refused.err).toMatch(/in flight .*\/1 \[30, 40\) planned/);
    expect(await ctx.ledger.readPartition(id, topic, 1)).toEqual(before);
    expect((await ctx.ledger.readMeta(id))?.lastChange).toBeUndefined();

    const res = await processRange(
      { ledger: ctx.ledger, readerFor: (s) => ctx.readerFor(s), handlerFor: (s) => ctx.handlerFor(s) },
      { stream, range: dispatcher.dispatched[0]!, deadlineAtMs: Date.now() + 60_000 },
    );
    expect(res.status).toBe('done');
    const done = await cli(['rewind', id, '--to', '25', '--topic', topic, '--partition', '1', '--json']);
    expect(done.code).toBe(0);
    expect(JSON.parse(done.out)).toMatchObject({ partitions: [{ partition: 1, committed: 40, to: 25 }], removedRanges: 1 });
    expect(await ctx.ledger.readPartition(id, topic, 1)).toMatchObject({ committed: 25, nextFrom: 25, status: 'active' });
    expect((await ctx.ledger.readMeta(id))?.lastChange).toMatchObject({ by: 'ops-tester', what: `rewind to offset 25: ${topic}/1 40->25` });

    // The planner continues from 25, re-using the range key of offset 30's old range without collision.
    await catchUp();
    expect(await ctx.ledger.readPartition(id, topic, 1)).toMatchObject({ committed: 40, nextFrom: 40 });
    expect(await ctx.ledger.readRange(id, { topic, partition: 1, from: 25 })).toMatchObject({ status: 'done', until: 40 });
  });

  it('replay: a bounded backfill into its own stream and sink table finishes by itself', async () => {
    const res = await cli(['replay', id, '--from', `@${t0 - 60_000}`, '--to', 'now', '--name', 'r1', '--sink-table', replaySink, '--json']);
    expect(res.code).toBe(0);
    const out = JSON.parse(res.out);
    expect(out.run).toMatchObject({ stream: `${id}-replay-r1`, finished: true });
    expect(out.replay.partitions).toEqual([
      { topic, partition: 0, start: 0, stop: 32 },
      { topic, partition: 1, start: 0, stop: 40 },
    ]);
    const late = { total: 45, count: 10 };
    expect(await scanTotals(ddb, replaySink)).toEqual({ ...expected, 'acct-late': late });
    const status = JSON.parse((await cli(['status', `${id}-replay-r1`, '--json'])).out);
    expect(status).toMatchObject({ bounded: true, finishedAtMs: expect.any(Number), totals: { lag: 0, deadLetters: 2 } });
    expect(status.lastChange.what).toMatch(/^replay of .* 72 offsets in 2 partition\(s\) into /);
    // Running the same replay again changes nothing: it is finished.
    const again = await cli([
      'replay',
      id,
      '--from',
      `@${t0 - 60_000}`,
      '--to',
      'now',
      '--name',
      'r1',
      '--sink-table',
      replaySink,
      '--json',
    ]);
    expect(JSON.parse(again.out).run).toMatchObject({ finished: true, records: 0, invocations: 0 });
    expect(await scanTotals(ddb, replaySink)).toEqual({ ...expected, 'acct-late': late });
    // The two poison records are dead letters of the replay too, and the summary says so.
    expect(out.run).toMatchObject({ deadLetters: 2, unapplied: 0 });
    const text = await cli(['replay', id, '--from', `@${t0 - 60_000}`, '--to', 'now', '--name', 'r1', '--sink-table', replaySink]);
    expect(text.code).toBe(0);
    expect(text.out).toMatch(
      /^finished: 0 records applied by 0 processor invocations in \d+ ms; 2 dead-lettered, not in the sink \(see: dead-letters .*-replay-r1\)$/m,
    );
  });
});

describe('operations CLI: failures say what failed', () => {
  /** The test's config with one stream changed. */
  const withStream = (over: Partial<StreamConfig>) => ({ ...config, streams: [{ ...stream, ...over }] });
  const quiet = () => ['log', 'info', 'warn', 'error'].map((m) => jest.spyOn(console, m as 'log').mockImplementation(() => undefined));

  it('status and plan exit 1 with one line naming the unreachable broker and the setting, and no client log lines', async () => {
    const port = await freePort(); // closed: nothing listens there
    const bad = withStream({ kafka: { ...stream.kafka, brokers: [`127.0.0.1:${port}`] } });
    const spies = quiet();
    try {
      const status = await cli(['status', id], { loadConfig: () => ({ config: bad, env }) });
      expect(status.code).toBe(1);
      expect(status.err).toBe(
        `error: Kafka: cannot reach 127.0.0.1:${port} (ECONNREFUSED) during describeTopics [kafka.brokers of stream ${id}]\n`,
      );
      expect(status.out).toMatch(/total lag unknown \(Kafka unavailable\)/);
      const plan = await cli(['plan', '--dry-run', id], { loadConfig: () => ({ config: bad, env }) });
      expect(plan.code).toBe(1);
      expect(plan.err).toBe(
        `error (KAFKA): Kafka: cannot reach 127.0.0.1:${port} (ECONNREFUSED) during describeTopics [kafka.brokers of stream ${id}]\n`,
      );
      for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });

  it('status and plan warn about a listed topic the broker does not have', async () => {
    const missing = `${id}-nope`;
    const bad = withStream({ topics: [topic, missing] });
    const status = await cli(['status', id], { loadConfig: () => ({ config: bad, env }) });
    expect(status.code).toBe(0);
    expect(status.out).toMatch(
      new RegExp(`^warning: topic ${missing} of stream ${id} does not exist in Kafka \\(topics in the stream config\\)$`, 'm'),
    );
    const plan = await cli(['plan', '--dry-run', id, '--json'], { loadConfig: () => ({ config: bad, env }) });
    expect(plan.code).toBe(0);
    expect(JSON.parse(plan.out)[0]).toMatchObject({ topicsMissing: 1 });
    expect(plan.err).toMatch(new RegExp(`^warning: topic ${missing} of stream ${id} does not exist in Kafka`, 'm'));
  });

  it('status warns about a topic pattern matching nothing', async () => {
    const { topics: _topics, ...rest } = stream;
    const bad = { ...config, streams: [{ ...rest, topicPattern: `${id}-nothing-.*` }] };
    const status = await cli(['status', id], { loadConfig: () => ({ config: bad, env }) });
    expect(status.code).toBe(0);
    expect(status.out).toMatch(new RegExp(`^warning: topicPattern /${id}-nothing-\\.\\*/ of stream ${id} matches no topic in Kafka$`, 'm'));
  });

  it('exits 1 with one line naming DYNAMODB_ENDPOINT when the endpoint does not answer', async () => {
    const port = await freePort();
    const res = await cli(['status', id], {
      loadConfig: () => ({ config, env: { ...env, DYNAMODB_ENDPOINT: `http://127.0.0.1:${port}` } }),
    });
    expect(res.code).toBe(1);
    expect(res.err).toMatch(
      new RegExp(
        `^error \\(STORE\\): read .* of ${id}: cannot reach DynamoDB at 127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\) \\[DYNAMODB_ENDPOINT, else the AWS_REGION endpoint\\]\\n$`,
      ),
    );
    expect(res.err.split('\n').filter(Boolean)).toHaveLength(1);
  });
});
