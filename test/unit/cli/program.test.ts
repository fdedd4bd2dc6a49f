/**
 * The operations CLI on in-memory fakes: wrong arguments print usage, exit 2 and touch nothing
 * (no config is even loaded); refusals exit 3 and leave the ledger as it was.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KafkaJSConnectionError, KafkaJSNumberOfRetriesExceeded } from 'kafkajs';
import { runCli, type CliDeps } from '../../../lib/cli/program';
import { parseDeploymentConfig, type DeploymentConfig } from '../../../lib/config/schema';
import { createRecordingDispatcher } from '../../../lib/dispatch/dispatcher.local';
import { runningTotals } from '../../../lib/handlers/running-totals';
import { toKafkaError } from '../../../lib/kafka/errors';
import { createMemoryKafka } from '../../../lib/kafka/metadata.memory';
import { createMemoryRangeReader } from '../../../lib/kafka/range-reader.memory';
import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import type { OpsContext, OpsContextOptions } from '../../../lib/ops/context';
import { parseRewindTarget } from '../../../lib/ops/rewind';
import { parseTimestamp } from '../../../lib/ops/time';
import { planStream } from '../../../lib/planner/run';

const NOW = Date.parse('2026-05-01T12:00:00Z');

function fakes(streams = ['s1']) {
  const config: DeploymentConfig = parseDeploymentConfig(
    {
      ledgerTable: 'ledger',
      streams: streams.map((id) => ({
        id,
        kafka: { brokers: ['localhost:9092'] },
        topics: ['orders'],
        handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: 'totals' },
      })),
    },
    'test',
  );
  const kafka = createMemoryKafka();
  kafka.createTopic('orders', 2);
  kafka.produce('orders', 0, 30);
  kafka.produce('orders', 1, 20);
  const ledger = createMemoryLedger();
  const reader = createMemoryRangeReader();
  reader.append(
    'orders',
    0,
    Array.from({ length: 30 }, (_, i) => ({ key: `k${i % 3}`, value: JSON.stringify({ amount: i }) })),
  );
  const contexts: OpsContext[] = [];
  const contextFor = jest.fn((cfg: DeploymentConfig, _env: NodeJS.ProcessEnv, _options: OpsContextOptions): OpsContext => {
    const ctx: OpsContext = {
      config: cfg,
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
    contexts.push(ctx);
    return ctx;
  });
  const loadConfig = jest.fn(() => ({ config, env: {} }));
  const out: string[] = [];
  const err: string[] = [];
  const deps: CliDeps = { env: { USER: 'alice' }, now: () => NOW, loadConfig, contextFor };
  const run = (...argv: string[]) => runCli(argv, { out: (s) => out.push(s), err: (s) => err.push(s) }, deps);
  const plan = () =>
    planStream(
      { ledger, metadataFor: async () => kafka, dispatcher: createRecordingDispatcher(), plannerLeaseMs: 1000 },
      config.streams[0]!,
      {
        dryRun: false,
        nowMs: NOW - 10_000,
      },
    );
  return { config, kafka, ledger, reader, contextFor, loadConfig, run, plan, out: () => out.join(''), err: () => err.join('') };
}

describe('CLI argument validation', () => {
  it.each([
    [[]],
    [['frobnicate']],
    [['status', '--bogus']],
    [['peek', 'orders', 'x', '0']],
    [['peek', 'orders', '0', '-5']],
    [['peek', 'orders', '0', '0', '--count', '0']],
    [['peek', 'orders', '0', '0', '--count', '5000']],
    [['peek', 'bad topic!', '0', '0']],
    [['peek', 'orders', '0']],
    [['rewind', 's1']],
    [['rewind', 's1', '--to', 'yesterday']],
    [['rewind', 's1', '--to', '12abc']],
    [['rewind', 's1', '--to', 'earliest', '--partition', 'one']],
    [['replay', 's1', '--from', '-1h']],
    [['replay', 's1', '--from', 'now', '--to', '-1h']],
    [['replay', 's1', '--from', '2026-13-45', '--to', 'now']],
    [['replay', 's1', '--from', '-1h', '--to', 'now', '--name', 'Bad Name']],
    [['replay', 's1', '--from', '-1h', '--to', 'now', '--sink-table', 'x']],
    [['replay', 's1', '--from', '-1h', '--to', 'now', '--name', 'a'.repeat(80)]],
    [['dead-letters', 's1', '--redrive', 'orders/0/5', '--redrive-all']],
    [['dead-letters', 's1', '--redrive', 'orders-0-5']],
    [['plan']],
    [['history', 's1', '--since', 'yesterday']],
    [['history', 's1', '--partition', 'one']],
  ])('%j prints usage, exits 2 and changes nothing', async (argv) => {
    const t = fakes();
    expect(await t.run(...argv)).toBe(2);
    expect(t.err()).toMatch(/Usage: kafka-direct/);
    // Rejected before any client existed: no config loaded, no ledger request.
    expect(t.contextFor).not.toHaveBeenCalled();
    expect(t.ledger.requestCount()).toBe(0);
  });

  it('prints help and exits 0 for --help', async () => {
    const t = fakes();
    expect(await t.run('--help')).toBe(0);
    expect(t.out()).toMatch(/status \[options\] \[stream\]/);
    expect(await t.run('rewind', '--help')).toBe(0);
    expect(t.out()).toMatch(/--to <target>/);
  });

  it('names the stream when the config has several and none is given', async () => {
    const t = fakes(['a', 'b']);
    expect(await t.run('status')).toBe(2);
    expect(t.err()).toMatch(/name a stream: the config has several \(a, b\)/);
    expect(await t.run('status', 'nope')).toBe(2);
    expect(t.err()).toMatch(/unknown stream "nope"/);
  });
});

describe('CLI on in-memory fakes', () => {
  it('status shows committed, latest and lag per partition, as a table or JSON', async () => {
    const t = fakes();
    await t.plan();
    expect(await t.run('status', '--json')).toBe(0);
    const s = JSON.parse(t.out());
    expect(
      s.partitions.map((p: { partition: number; committed: number; latest: number; lag: number; inFlight: number }) => [
        p.partition,
        p.committed,
        p.latest,
        p.lag,
        p.inFlight,
      ]),
    ).toEqual([
      [0, 0, 30, 30, 1],
      [1, 0, 20, 20, 1],
    ]);
    expect(await t.run('status')).toBe(0);
    expect(t.out()).toMatch(/total lag 50, ranges in flight 2/);
  });

  it('status --json lists the recorded data-loss spans and the open ranges (from, until, attempts, last error) per partition', async () => {
    const t = fakes();
    await t.plan();
    const s = t.ledger.store('s1');
    const reason = 'retention deleted offsets before they were processed';
    s.losses.push({ stream: 's1', topic: 'orders', partition: 1, from: 0, until: 5, detectedAtMs: NOW - 60_000, reason });
    const r0 = s.ranges.get('orders/0/0')!;
    Object.assign(r0, { status: 'failed', attempts: 2, progress: 7, lastError: 'TypeError: boom' });
    expect(await t.run('status', '--json')).toBe(0);
    const json = JSON.parse(t.out());
    const [p0, p1] = json.partitions;
    expect(p0.openRanges).toEqual([{ from: 0, until: r0.until, status: 'failed', attempts: 2, progress: 7, lastError: 'TypeError: boom' }]);
    expect(p0.dataLoss).toEqual([]);
    expect(p1.dataLoss).toEqual([{ from: 0, until: 5, detectedAtMs: NOW - 60_000, reason }]);
    expect(p1.dataLossRecords).toBe(5);
    expect(p1.openRanges).toEqual([expect.objectContaining({ from: 0, status: 'planned', attempts: 0 })]);
    expect(p1.openRanges[0].lastError).toBeUndefined();
    // The table shows the same span, one line per span under the totals.
    expect(await t.run('status')).toBe(0);
    expect(t.out()).toContain(`  orders/1 data loss: [0, 5) 5 records, detected ${new Date(NOW - 60_000).toISOString()}: ${reason}`);
    expect(t.out()).toContain('orders/0 last range error: TypeError: boom');
  });

  it('status shows a topic re-created under its name: what the old incarnation reached and where the new one reads', async () => {
    const t = fakes();
    await t.plan();
    const s = t.ledger.store('s1');
    const oldId = s.partitions.get('orders/0')?.topicId;
    t.kafka.deleteTopic('orders');
    t.kafka.createTopic('orders', 2);
    t.kafka.produce('orders', 0, 5);
    await t.plan();
    expect(await t.run('status', '--json')).toBe(0);
    expect(JSON.parse(t.out()).recreated).toHaveLength(2);
    expect(await t.run('status')).toBe(0);
    expect(t.out()).toMatch(
      new RegExp(
        `orders/0 re-created: incarnation 0 \\(topic id ${oldId}\\) closed at .* with committed 0, planned up to 30, 1 open range\\(s\\) removed unread; incarnation 1 \\(topic id [\\w-]+\\) reads from 0`,
      ),
    );
  });

  it("status shows the planner loop: its holder, lease and waiting successor, the last run and tick; once released, the next tick's due time", async () => {
    const t = fakes();
    await t.plan();
    const stream = 's1';
    await t.ledger.takePlannerLoop({ stream, ownerToken: 'inv-a', nowMs: NOW - 20_000, leaseMs: 60_000, asSuccessor: true });
    await t.ledger.renewPlannerLoop({ stream, ownerToken: 'inv-a', nowMs: NOW - 5_000, leaseMs: 60_000, lastTickAtMs: NOW - 5_000 });
    // The next scheduled invocation finds it held and waits as the successor.
    await t.ledger.takePlannerLoop({ stream, ownerToken: 'inv-b', nowMs: NOW - 1_000, leaseMs: 60_000, asSuccessor: true });

    expect(await t.run('status', '--json')).toBe(0);
    expect(JSON.parse(t.out())).toMatchObject({
      epoch: 1,
      lastRunAtMs: NOW - 10_000,
      loop: {
        state: 'held',
        ownerToken: 'inv-a',
        sinceMs: NOW - 20_000,
        leaseUntilMs: NOW + 55_000,
        successor: 'inv-b',
        lastTickAtMs: NOW - 5_000,
      },
    });
    const jsonLength = t.out().length;
    expect(await t.run('status')).toBe(0);
    const lines = t.out().slice(jsonLength).split('\n');
    expect(lines[0]).toMatch(/^stream s1: started .*, planner epoch 1$/);
    expect(lines[1]).toBe(
      'planner loop: held by inv-a since 2026-05-01T11:59:40.000Z, lease until 2026-05-01T12:00:55.000Z (in 55.0s); successor inv-b waiting to take over',
    );
    expect(lines[2]).toBe(
      'last planner run 2026-05-01T11:59:50.000Z (10.0s ago); last tick recorded on the loop 2026-05-01T11:59:55.000Z (5.0s ago)',
    );

    // The holder hands over after its tick, leaving when the next one is due for the successor.
    await t.ledger.releasePlannerLoop({ stream, ownerToken: 'inv-a', lastTickAtMs: NOW - 2_000, nextTickDueMs: NOW - 1_000 });
    const before = t.out().length;
    expect(await t.run('status', '--json')).toBe(0);
    expect(JSON.parse(t.out().slice(before)).loop).toEqual({
      state: 'free',
      successor: 'inv-b',
      lastTickAtMs: NOW - 2_000,
      nextTickDueMs: NOW - 1_000,
    });
    expect(await t.run('status')).toBe(0);
    expect(t.out()).toContain(
      'planner loop: free (released by its last holder), next tick due at 2026-05-01T11:59:59.000Z (1.0s ago); successor inv-b waiting to take over\n',
    );
  });

  it('rewind refuses while ranges are in flight (exit 3) and changes nothing', async () => {
    const t = fakes();
    await t.plan();
    const before = JSON.stringify([...t.ledger.store('s1').partitions.values()]);
    expect(await t.run('rewind', 's1', '--to', 'earliest')).toBe(3);
    expect(t.err()).toMatch(/2 range\(s\) in flight/);
    expect(JSON.stringify([...t.ledger.store('s1').partitions.values()])).toBe(before);
    expect(t.ledger.store('s1').meta?.lastChange).toBeUndefined();
  });

  it('rewinds idle partitions and records who and when; an offset needs one partition', async () => {
    const t = fakes();
    await t.plan();
    const s = t.ledger.store('s1');
    for (const r of s.ranges.values()) {
      Object.assign(r, { status: 'done', progress: r.until });
      s.partitions.get(`${r.topic}/${r.partition}`)!.committed = r.until;
    }
    expect(await t.run('rewind', 's1', '--to', '7')).toBe(2);
    expect(t.err()).toMatch(/needs exactly one partition/);
    expect(s.meta?.lastChange).toBeUndefined();
    expect(await t.run('rewind', 's1', '--to', '99', '--partition', '0')).toBe(2);
    expect(t.err()).toMatch(/outside orders\/0's offsets \[0, 30\]/);

    expect(await t.run('rewind', 's1', '--to', '7', '--topic', 'orders', '--partition', '0', '--json')).toBe(0);
    expect(JSON.parse(t.out())).toMatchObject({ partitions: [{ partition: 0, committed: 30, to: 7 }], removedRanges: 0 });
    expect(s.partitions.get('orders/0')).toMatchObject({ committed: 7, nextFrom: 7 });
    expect(s.partitions.get('orders/1')).toMatchObject({ committed: 20, nextFrom: 20 });
    expect(s.meta?.lastChange).toEqual({ by: 'alice', atMs: NOW, what: 'rewind to offset 7: orders/0 30->7' });
    // The planner is free again afterwards (the operator's lease was released).
    expect((await t.plan()).status).toBe('planned');
  });

  it('status points at a parked range, and rewinding there abandons it and resumes from that offset', async () => {
    const t = fakes();
    await t.plan();
    const s = t.ledger.store('s1');
    const r0 = s.ranges.get('orders/0/0')!;
    Object.assign(r0, { status: 'parked', progress: 12, lastError: 'POISON_RECORD: handler rejected orders/0/12 3 times' });
    const r1 = s.ranges.get('orders/1/0')!;
    Object.assign(r1, { status: 'done', progress: r1.until });
    s.partitions.get('orders/1')!.committed = r1.until;
    expect(await t.run('status')).toBe(0);
    expect(t.out()).toMatch(
      /orders\/0 is stopped by a parked range at offset 12: once fixed, rewind s1 --topic orders --partition 0 --to 12/,
    );
    expect(await t.run('rewind', 's1', '--to', '12', '--partition', '0', '--json')).toBe(0);
    expect(t.out()).toMatch(/"abandonedParkedRanges":1/);
    expect(s.partitions.get('orders/0')).toMatchObject({ committed: 12, nextFrom: 12 });
    expect(s.ranges.has('orders/0/0')).toBe(false);
  });

  it('rewind --dry-run shows the new offsets and writes nothing', async () => {
    const t = fakes();
    await t.plan();
    const s = t.ledger.store('s1');
    for (const r of s.ranges.values()) Object.assign(r, { status: 'done', progress: r.until });
    for (const p of s.partitions.values()) p.committed = p.nextFrom;
    expect(await t.run('rewind', 's1', '--to', 'earliest', '--dry-run')).toBe(0);
    expect(t.out()).toMatch(/would rewind stream s1 to earliest/);
    expect([...s.partitions.values()].map((p) => p.committed)).toEqual([30, 20]);
  });

  it('peek prints one JSON object per record with offset, key, value, headers and timestamp', async () => {
    const t = fakes();
    expect(await t.run('peek', 'orders', '0', '28', '--count', '5', '--json')).toBe(0);
    const lines = t
      .out()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toEqual([
      expect.objectContaining({ offset: 28, key: 'k1', value: '{"amount":28}', headers: [], timestamp: 1028, timestampType: 'CreateTime' }),
      expect.objectContaining({ offset: 29, key: 'k2', value: '{"amount":29}' }),
    ]);
    expect(t.ledger.requestCount()).toBe(0);
  });

  it('peek refuses a topic the stream does not consume (named or not), exits 2, reads nothing', async () => {
    const t = fakes();
    t.kafka.createTopic('cards', 1);
    t.kafka.produce('cards', 0, 1);
    const read = jest.spyOn(t.reader, 'read');
    expect(await t.run('peek', 'cards', '0', '0', '--json')).toBe(2);
    expect(t.err()).toMatch(/error: no stream consumes topic cards \(s1: topics orders\): peek reads only the streams' own topics/);
    expect(await t.run('peek', 'cards', '0', '0', '--stream', 's1')).toBe(2);
    expect(t.err()).toMatch(/error: stream s1 does not consume topic cards \(its topics orders\)/);
    expect(await t.run('peek', '__consumer_offsets', '0', '0', '--stream', 's1')).toBe(2);
    expect(t.out()).toBe('');
    expect(read).not.toHaveBeenCalled();
  });

  it('history lists the finished ranges, archived and live, oldest first; filtered by time, topic and partition', async () => {
    const t = fakes();
    t.kafka.produce('orders', 0, 0);
    const finish = async (atMs: number) => {
      for (const r of (await t.ledger.readRanges('s1')).filter((x) => x.status !== 'done')) {
        const [taken] = await t.ledger.takeRangeLeases({
          stream: 's1',
          ranges: [{ topic: r.topic, partition: r.partition, from: r.from, until: r.until }],
          leaseToken: `tok-${atMs}`,
          nowMs: atMs,
          leaseMs: 60_000,
          maxAttempts: 3,
        });
        if (taken?.kind !== 'taken') throw new Error(`lease of ${r.topic}/${r.partition} not taken: ${taken?.kind}`);
        const range = { ...taken.range, leaseToken: `tok-${atMs}` };
        const stats = { records: r.until - r.from, processingMs: 5, schedulingDelayMs: 1, finishedAtMs: atMs };
        await t.ledger.completeRanges([{ range, expectProgress: r.from, nowMs: atMs, stats, advancePartition: true }]);
      }
    };
    await t.plan();
    await finish(NOW - 7_200_000);
    t.kafka.produce('orders', 0, 5);
    // This run archives partition 0's first range: it plans the partition's next one.
    await planStream(
      { ledger: t.ledger, metadataFor: async () => t.kafka, dispatcher: createRecordingDispatcher(), plannerLeaseMs: 1000 },
      t.config.streams[0]!,
      { dryRun: false, nowMs: NOW - 5_000 },
    );
    await finish(NOW - 1_000);
    expect(t.ledger.allRanges('s1').length).toBeGreaterThan((await t.ledger.readRanges('s1')).length);

    expect(await t.run('history', 's1', '--since', '-3h', '--json')).toBe(0);
    const all = t
      .out()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(all.map((r) => [r.partition, r.from, r.until, r.finishedAtMs])).toEqual([
      [0, 0, 30, NOW - 7_200_000],
      [1, 0, 20, NOW - 7_200_000],
      [0, 30, 35, NOW - 1_000],
    ]);
    const u = fakesOut(t);
    expect(await t.run('history', 's1', '--since', '-1h', '--partition', '0')).toBe(0);
    const recent = u();
    expect(recent).toMatch(/^1 range\(s\) of stream s1 finished since 2026-05-01T11:00:00.000Z\n/);
    expect(recent).toMatch(/orders\/0\s+30\s+35\s+5\s+1 /);
    expect(await t.run('history', 's1', '--since', '-1h', '--topic', 'other')).toBe(0);
    expect(u()).toMatch(/^0 range\(s\) of stream s1/);
  });

  it('plan --dry-run reports the ranges the next run would plan and writes nothing', async () => {
    const t = fakes();
    expect(await t.run('plan', '--dry-run', '--json')).toBe(0);
    const [rep] = JSON.parse(t.out());
    expect(rep).toMatchObject({ dryRun: true, rangesPlanned: 2, recordsPlanned: 50 });
    expect(t.ledger.store('s1').partitions.size).toBe(0);
  });
});

/** The output printed since the last call. */
function fakesOut(t: ReturnType<typeof fakes>): () => string {
  let seen = t.out().length;
  return () => {
    const all = t.out();
    const next = all.slice(seen);
    seen = all.length;
    return next;
  };
}

/** Marks every range done and each partition committed up to its cursor (nothing in flight). */
function finishRanges(t: ReturnType<typeof fakes>): void {
  const s = t.ledger.store('s1');
  for (const r of s.ranges.values()) Object.assign(r, { status: 'done', progress: r.until });
  for (const p of s.partitions.values()) p.committed = p.nextFrom;
}

const DOWN = 'LEADER_UNREACHABLE: LEADER_UNREACHABLE (simulated)';

describe('CLI during a leader failure: the partitions whose leaders answer are read, the others marked unavailable', () => {
  it('status: offsets of the live partitions, the other marked unavailable with its reason, lag partial, exit 0', async () => {
    const t = fakes();
    await t.plan();
    t.kafka.setUnavailable('orders', 1);
    expect(await t.run('status', '--json')).toBe(0);
    const s = JSON.parse(t.out());
    expect(s.kafkaError).toBeUndefined();
    expect(s.unavailablePartitions).toBe(1);
    expect(s.totals).toMatchObject({ lag: 30, lagUnknownPartitions: 1 });
    expect(s.partitions[0]).toMatchObject({ partition: 0, latest: 30, lag: 30 });
    expect(s.partitions[0].unavailable).toBeUndefined();
    expect(s.partitions[1]).toMatchObject({
      partition: 1,
      committed: 0,
      unavailable: { code: 'LEADER_UNREACHABLE', reason: 'LEADER_UNREACHABLE (simulated)' },
    });
    expect(s.partitions[1].latest).toBeUndefined();
    expect(s.partitions[1].lag).toBeUndefined();
    expect(t.err()).toBe(`warning: Kafka offsets of 1 partition of stream s1 unavailable (latest and lag unknown): orders/1: ${DOWN}\n`);
    expect(await t.run('status')).toBe(0);
    expect(t.out()).toMatch(/^orders +1 +active +0 +unavailable +- /m);
    expect(t.out()).toMatch(/^warning: Kafka offsets of 1 partition of stream s1 unavailable \(latest and lag unknown\): orders\/1: /m);
    expect(t.out()).toMatch(/total lag 30 \(partial: lag of 1 partition unknown\), ranges in flight 2/);
  });

  it('status: exit 1 only when no partition could be read; the rows still say why', async () => {
    const t = fakes();
    await t.plan();
    t.kafka.setUnavailable('orders', 0);
    t.kafka.setUnavailable('orders', 1, 'NO_LEADER');
    expect(await t.run('status', '--json')).toBe(1);
    const s = JSON.parse(t.out());
    expect(s.partitions.map((p: { unavailable?: { code: string } }) => p.unavailable?.code)).toEqual(['LEADER_UNREACHABLE', 'NO_LEADER']);
    expect(s.totals).toMatchObject({ lag: 0, lagUnknownPartitions: 2 });
    expect(t.err()).toBe(
      `error: Kafka: no offsets could be read (2 partitions of stream s1): orders/0: ${DOWN}; orders/1: NO_LEADER: NO_LEADER (simulated)\n`,
    );
    expect(await t.run('status')).toBe(1);
    expect(t.out()).toMatch(/total lag unknown \(Kafka unavailable\)/);
  });

  it('plan --dry-run: plans the live partitions, shows the others unavailable with the reason; exit 1 only when nothing could be read', async () => {
    const t = fakes();
    t.kafka.setUnavailable('orders', 1);
    expect(await t.run('plan', '--dry-run', '--json')).toBe(0);
    const [rep] = JSON.parse(t.out());
    expect(rep).toMatchObject({ status: 'planned', rangesPlanned: 1, recordsPlanned: 30, unavailablePartitions: 1 });
    expect(rep.partitions[1]).toMatchObject({
      partition: 1,
      action: 'no-offsets',
      unavailable: 'LEADER_UNREACHABLE',
      unavailableReason: 'LEADER_UNREACHABLE (simulated)',
    });
    expect(t.err()).toBe(`warning: Kafka: offsets of 1 partition unavailable for stream s1, nothing planned for them: orders/1: ${DOWN}\n`);
    expect(await t.run('plan', '--dry-run')).toBe(0);
    expect(t.out()).toMatch(/would plan 1 range\(s\), 30 records; .* unavailable 1$/m);
    expect(t.out()).toMatch(/^orders +1 +new +0 +0 +unavailable +- +no-offsets/m);
    expect(t.out()).toMatch(/^ {2}orders\/1: offsets unavailable this run: LEADER_UNREACHABLE: /m);

    t.kafka.setUnavailable('orders', 0);
    expect(await t.run('plan', '--dry-run')).toBe(1);
    expect(t.err()).toMatch(
      /^error: Kafka: no offsets could be read \(2 partitions\) for stream s1, nothing planned for them: orders\/0, orders\/1: LEADER_UNREACHABLE: /m,
    );
    expect(t.ledger.store('s1').partitions.size).toBe(0);
  });

  it("peek: a live leader's partition is read; a dead leader's one fails in one line naming Kafka, the partition and the reason", async () => {
    const t = fakes();
    t.kafka.setUnavailable('orders', 1);
    const read = jest.spyOn(t.reader, 'read');
    expect(await t.run('peek', 'orders', '0', '28', '--json')).toBe(0);
    expect(t.out().trim().split('\n')).toHaveLength(2);
    read.mockClear();
    expect(await t.run('peek', 'orders', '1', '0')).toBe(1);
    expect(t.err()).toBe(
      `error (KAFKA): Kafka: partition orders/1 unavailable (stream s1): ${DOWN}; retry once Kafka has elected a new leader\n`,
    );
    expect(read).not.toHaveBeenCalled();
    // A partition Kafka does not have is bad input.
    expect(await t.run('peek', 'orders', '7', '0')).toBe(2);
    expect(t.err()).toMatch(/error: Kafka has no partition orders\/7 \(stream s1\): partition orders\/7 does not exist/);
  });

  it('rewind --dry-run computes the live partitions and lists the other; a rewind is refused (exit 3) unless narrowed to live ones', async () => {
    const t = fakes();
    await t.plan();
    finishRanges(t);
    const s = t.ledger.store('s1');
    t.kafka.setUnavailable('orders', 1);
    expect(await t.run('rewind', 's1', '--to', 'earliest', '--dry-run', '--json')).toBe(0);
    const res = JSON.parse(t.out());
    expect(res.partitions).toEqual([expect.objectContaining({ partition: 0, committed: 30, to: 0 })]);
    expect(res.unavailable).toEqual([
      { topic: 'orders', partition: 1, code: 'LEADER_UNREACHABLE', reason: 'LEADER_UNREACHABLE (simulated)' },
    ]);
    expect(t.err()).toBe(`warning: Kafka offsets of 1 partition of stream s1 unavailable: orders/1: ${DOWN}\n`);
    expect(await t.run('rewind', 's1', '--to', '-1h', '--dry-run')).toBe(0);
    expect(t.out()).toMatch(/^ {2}unavailable, not rewound: orders\/1: LEADER_UNREACHABLE: /m);
    expect(t.out()).toMatch(/^ {2}a rewind now would be refused: a rewind moves every selected partition or none/m);

    const before = JSON.stringify([...s.partitions.values()]);
    expect(await t.run('rewind', 's1', '--to', 'earliest')).toBe(3);
    expect(t.err()).toMatch(
      /^refused: rewind of s1 refused: Kafka offsets of 1 partition unavailable \(orders\/1: LEADER_UNREACHABLE: .*\); a rewind moves every selected partition or none: .*select only partitions whose leaders answer \(--topic, --partition\); nothing was changed$/m,
    );
    expect(JSON.stringify([...s.partitions.values()])).toBe(before);
    expect(s.meta?.lastChange).toBeUndefined();

    // Only the dead leader's partition selected: nothing could be read.
    expect(await t.run('rewind', 's1', '--to', 'earliest', '--partition', '1', '--dry-run')).toBe(1);
    expect(t.err()).toMatch(/^error: Kafka offsets of 1 partition of stream s1 unavailable: orders\/1: /m);
    expect(await t.run('rewind', 's1', '--to', 'earliest', '--partition', '0')).toBe(0);
    expect(s.partitions.get('orders/0')).toMatchObject({ committed: 0, nextFrom: 0 });
    expect(s.partitions.get('orders/1')).toMatchObject({ committed: 20, nextFrom: 20 });
  });

  it('replay is refused (exit 3) while a partition is unavailable, naming it; nothing is created', async () => {
    const t = fakes();
    t.kafka.setUnavailable('orders', 1, 'NO_LEADER');
    expect(await t.run('replay', 's1', '--from', '-1h', '--to', 'now', '--name', 'x', '--no-run')).toBe(3);
    expect(t.err()).toBe(
      'refused: replay of s1 refused: Kafka offsets of 1 partition unavailable (orders/1: NO_LEADER: NO_LEADER (simulated)); ' +
        'a replay covers every partition from its creation: retry once Kafka has elected new leaders; nothing was created\n',
    );
    expect(await t.ledger.readPartitions('s1-replay-x')).toEqual([]);
  });
});

/** What kafkajs throws when every connection attempt to the seed broker was refused. */
function refused(broker: string): KafkaJSNumberOfRetriesExceeded {
  const cause = new KafkaJSConnectionError(`Connection error: connect ECONNREFUSED ${broker}`, { broker, code: 'ECONNREFUSED' });
  return new KafkaJSNumberOfRetriesExceeded(cause, { retryCount: 2, retryTime: 400 });
}

describe('CLI failures say what failed', () => {
  it('status exits 1 with one line naming the broker, the cause and the setting when Kafka cannot be reached; lag is unknown, not 0', async () => {
    const t = fakes();
    await t.plan();
    jest.spyOn(t.kafka, 'describeTopics').mockRejectedValue(toKafkaError('describeTopics', refused('127.0.0.1:1')));
    expect(await t.run('status')).toBe(1);
    expect(t.err()).toBe('error: Kafka: cannot reach 127.0.0.1:1 (ECONNREFUSED) during describeTopics [kafka.brokers of stream s1]\n');
    expect(t.out()).toMatch(/total lag unknown \(Kafka unavailable\)/);
    expect(t.out()).not.toMatch(/total lag 0/);
    expect(await t.run('status', '--json')).toBe(1);
  });

  it('plan --dry-run exits 1 naming the broker and the stream whose kafka.brokers to check', async () => {
    const t = fakes();
    jest.spyOn(t.kafka, 'describeTopics').mockRejectedValue(toKafkaError('describeTopics', refused('127.0.0.1:1')));
    expect(await t.run('plan', '--dry-run')).toBe(1);
    expect(t.err()).toBe(
      'error (KAFKA): Kafka: cannot reach 127.0.0.1:1 (ECONNREFUSED) during describeTopics [kafka.brokers of stream s1]\n',
    );
  });

  it('status and plan warn about a listed topic Kafka does not have (exit 0: the rest of the stream is fine)', async () => {
    const t = fakes();
    t.config.streams[0] = { ...t.config.streams[0]!, topics: ['orders', 'refunds'] };
    expect(await t.run('status')).toBe(0);
    expect(t.out()).toMatch(/^warning: topic refunds of stream s1 does not exist in Kafka \(topics in the stream config\)$/m);
    expect(await t.run('plan', '--dry-run')).toBe(0);
    expect(t.out()).toMatch(/^warning: topic refunds of stream s1 does not exist in Kafka/m);
    expect(await t.run('plan', '--dry-run', '--json')).toBe(0);
    expect(t.err()).toMatch(/^warning: topic refunds of stream s1 does not exist in Kafka/m);
  });

  it('status and plan warn about a topic pattern matching nothing', async () => {
    const t = fakes();
    const { topics: _topics, ...rest } = t.config.streams[0]!;
    t.config.streams[0] = { ...rest, topicPattern: 'payments-.*' };
    expect(await t.run('status', '--json')).toBe(0);
    expect(JSON.parse(t.out()).topicsWarning).toBe('topicPattern /payments-.*/ of stream s1 matches no topic in Kafka');
    expect(t.err()).toBe('warning: topicPattern /payments-.*/ of stream s1 matches no topic in Kafka\n');
    expect(await t.run('plan', '--dry-run')).toBe(0);
    expect(t.out()).toMatch(/^warning: topicPattern \/payments-\.\*\/ of stream s1 matches no topic in Kafka$/m);
  });

  it('--version prints the package version and exits 0', async () => {
    const t = fakes();
    const { version } = JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as { version: string };
    expect(await t.run('--version')).toBe(0);
    expect(t.out()).toBe(`${version}\n`);
    expect(t.contextFor).not.toHaveBeenCalled();
  });

  it("keeps the Kafka client's log lines quiet unless --verbose", async () => {
    const t = fakes();
    expect(await t.run('status')).toBe(0);
    const quiet = t.contextFor.mock.calls[0]![2].kafkaLog!;
    quiet('error', 'Connection error: connect ECONNREFUSED 127.0.0.1:1', { namespace: 'Connection', broker: '127.0.0.1:1' });
    expect(t.err()).toBe('');
    expect(await t.run('--verbose', 'status')).toBe(0);
    const verbose = t.contextFor.mock.calls[1]![2].kafkaLog!;
    verbose('error', 'Connection error: connect ECONNREFUSED 127.0.0.1:1', { namespace: 'Connection', broker: '127.0.0.1:1' });
    expect(t.err()).toBe('[kafkajs error] Connection: Connection error: connect ECONNREFUSED 127.0.0.1:1 (broker=127.0.0.1:1)\n');
  });
});

describe('operator input parsing', () => {
  it('reads timestamps as ISO 8601, @epoch-ms, now or relative, and refuses bare numbers', () => {
    expect(parseTimestamp('2026-05-01T11:00:00Z', NOW)).toBe(NOW - 3_600_000);
    expect(parseTimestamp('2026-05-01', NOW)).toBe(Date.parse('2026-05-01T00:00:00Z'));
    expect(parseTimestamp('@1000', NOW)).toBe(1000);
    expect(parseTimestamp('now', NOW)).toBe(NOW);
    expect(parseTimestamp('-90s', NOW)).toBe(NOW - 90_000);
    expect(parseTimestamp('-2d', NOW)).toBe(NOW - 2 * 86_400_000);
    expect(() => parseTimestamp('1714564800000', NOW)).toThrow(/invalid timestamp/);
    expect(() => parseTimestamp('May 1', NOW)).toThrow(/invalid timestamp/);
  });

  it('reads rewind targets', () => {
    expect(parseRewindTarget('earliest', NOW)).toEqual({ kind: 'earliest' });
    expect(parseRewindTarget('latest', NOW)).toEqual({ kind: 'latest' });
    expect(parseRewindTarget('42', NOW)).toEqual({ kind: 'offset', offset: 42 });
    expect(parseRewindTarget('-1h', NOW)).toEqual({ kind: 'timestamp', ms: NOW - 3_600_000 });
    expect(() => parseRewindTarget('-1', NOW)).toThrow(/invalid --to/);
  });
});
