/**
 * One dead broker on a 3-broker cluster (replication 3, min.insync.replicas 2), started by the test:
 * the planner plans the partitions whose leaders answer in the same run, reports the dead leader's
 * partitions unavailable with the reason until re-election moves them, and processors read
 * everything exactly once; a second stream at `startingOffsets: latest` whose first run meets the
 * dead leader starts those partitions at their end once re-elected, not at earliest. The cluster is private to this file (its own dirs and ports) and stopped
 * in afterAll; the ledger lives on the shared DynamoDB emulator. The stream reaches it over SASL_SSL
 * with SCRAM-SHA-512 (the test's own set-up over PLAINTEXT), so the leader change, the metadata
 * refresh and the reconnects to the new leaders all re-authenticate over TLS; the chaos suite's
 * `leader-killed` does the same over plaintext. Then, the dead node restarted, another leader is
 * killed and the operations CLI runs against the cluster before re-election: `status`, `plan
 * --dry-run`, `peek` and `rewind --dry-run` read the live leaders' partitions and name the others.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { killKafkaNode, restartKafkaNode, startKafkaCluster, stopKafkaCluster, type KafkaCluster } from '../../infra/local/kafka';
import { CACHE_DIR } from '../../infra/local/stack/dirs';
import { runCli } from '../../lib/cli/program';
import { parseDeploymentConfig, parseStreamConfig, type StreamConfig, type StreamConfigInput } from '../../lib/config/schema';
import { createInProcessDispatcher } from '../../lib/dispatch/dispatcher.local';
import { createKafka } from '../../lib/kafka/client';
import { createMetadataCache } from '../../lib/kafka/metadata-cache';
import { createKafkajsMetadata } from '../../lib/kafka/metadata.kafkajs';
import { createKafkajsRangeReader } from '../../lib/kafka/range-reader.kafkajs';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { ensureLedgerTable } from '../../lib/ledger/table';
import { runPlanner, type StreamPlanReport } from '../../lib/planner/run';
import type { AtLeastOnceHandler } from '../../lib/processor/handler-api';
import { processRanges } from '../../lib/processor/process-range';
import type { RangeReader } from '../../lib/ports/range-reader';
import { rangesOfPayload } from '../../lib/ranges';
import { createTopicsReady, testDynamo, uniqueName } from '../support/env';

jest.setTimeout(240_000);

const PARTITIONS = 6;
const ddb = testDynamo();
const tableName = uniqueName('failover-ledger');
const dir = mkdtempSync(join(tmpdir(), 'kld-failover-'));
let cluster: KafkaCluster | undefined;
let admin: Admin;
let producer: Producer;
let reader: RangeReader | undefined;
const metadata = createMetadataCache();
const SCRAM = { name: 'failover', password: randomBytes(12).toString('base64url') };
process.env.FAILOVER_SCRAM_PASSWORD = SCRAM.password;
/** Nodes killed by a test and not restarted yet. */
const killed = new Set<number>();

async function kill(c: KafkaCluster, nodeId: number): Promise<void> {
  killed.add(nodeId);
  await killKafkaNode(c, nodeId);
}

/** The stream's way in: SASL_SSL with SCRAM-SHA-512 on every node. */
function securedKafka(c: KafkaCluster, brokers = c.secured!.saslSsl.split(',')) {
  return {
    brokers,
    ssl: { ca: readFileSync(c.secured!.tls.caCert, 'utf8') },
    sasl: { mechanism: 'scram-sha-512', username: SCRAM.name, password: { env: 'FAILOVER_SCRAM_PASSWORD' } },
  };
}

beforeAll(async () => {
  const [c] = await Promise.all([
    startKafkaCluster({ dir, cacheDir: CACHE_DIR, ownerPid: process.pid, brokers: 3, secured: { scramUsers: [SCRAM] } }),
    ensureLedgerTable(ddb, tableName),
  ]);
  cluster = c;
  const kafka = new Kafka({ clientId: 'failover-it', brokers: c.brokers.split(','), logLevel: logLevel.NOTHING });
  admin = kafka.admin();
  producer = kafka.producer();
  await Promise.all([admin.connect(), producer.connect()]);
}, 240_000);

afterAll(async () => {
  await Promise.all(
    [admin?.disconnect(), producer?.disconnect(), metadata.closeAll(), reader?.close()].map((p) => p?.catch(() => undefined)),
  );
  if (cluster) await stopKafkaCluster(cluster, 5_000);
  rmSync(dir, { recursive: true, force: true });
  ddb.destroy();
}, 60_000);

/** Partition -> leader node id, as the cluster reports it now. */
async function leaders(topic: string): Promise<Map<number, number>> {
  const md = await admin.fetchTopicMetadata({ topics: [topic] });
  return new Map(md.topics[0]!.partitions.map((p) => [p.partitionId, p.leader]));
}

const produce = (topic: string, partitions: number[], n: number, tag: string) =>
  producer.send({
    topic,
    acks: -1,
    messages: partitions.flatMap((partition) => Array.from({ length: n }, (_, i) => ({ value: `${tag}${i}`, partition }))),
  });

const all = Array.from({ length: PARTITIONS }, (_, p) => p);

/** The stream over `topic` on the cluster, as its config says it. */
const streamInput = (c: KafkaCluster, topic: string, over: Partial<StreamConfigInput> = {}) => ({
  id: topic,
  kafka: securedKafka(c),
  topics: [topic],
  triggerIntervalMs: 1_000,
  ...over,
});

/** A stream over `topic` on the cluster: real ledger, in-process processors counting each offset they handle. */
async function streamOn(c: KafkaCluster, topic: string, over: Partial<StreamConfigInput> = {}) {
  const stream: StreamConfig = parseStreamConfig(streamInput(c, topic, over), 'test');
  await reader?.close();
  reader = createKafkajsRangeReader(await createKafka(stream.kafka));
  const ledger = createDynamoLedger({ client: ddb, tableName });
  const seen = new Map<string, number>();
  const handler: AtLeastOnceHandler = {
    mode: 'at-least-once',
    handle(records) {
      for (const r of records) seen.set(`${r.partition}/${r.offset}`, (seen.get(`${r.partition}/${r.offset}`) ?? 0) + 1);
    },
  };
  const errors: string[] = [];
  const dispatcher = createInProcessDispatcher(
    (payload) =>
      processRanges(
        { ledger, readerFor: async () => reader!, handlerFor: () => handler },
        { stream, ranges: rangesOfPayload(payload), deadlineAtMs: Date.now() + 120_000, single: !('ranges' in payload) },
      ),
    (payload, err) =>
      errors.push(
        `${rangesOfPayload(payload)
          .map((r) => `${r.partition}/${r.from}`)
          .join(',')}: ${String(err)}`,
      ),
  );
  let nowMs = Date.now();
  // runPlanner, as the scheduled handler calls it: a run that throws is reported as failed.
  const run = async (): Promise<StreamPlanReport> => {
    nowMs = Math.max(nowMs + 1_000, Date.now());
    const deps = { ledger, dispatcher, metadataFor: (s: StreamConfig) => metadata.forStream(s), plannerLeaseMs: 60_000 };
    const [rep] = await runPlanner(deps, { streams: [stream], dryRun: false, nowMs });
    return rep!;
  };
  return { stream, dispatcher, seen, errors, run };
}

/** describeTopics + fetchAvailableOffsets from a fresh adapter whose first seed broker is `victim`. */
async function coldLookup(c: KafkaCluster, victim: number, stream: StreamConfig, topic: string) {
  const deadAddress = c.nodes.get(victim)!.secured!.saslSsl;
  const seeds = [deadAddress, ...c.secured!.saslSsl.split(',').filter((b) => b !== deadAddress)];
  const cold = createKafkajsMetadata(await createKafka({ ...stream.kafka, brokers: seeds }));
  try {
    const t = Date.now();
    const topics = await cold.describeTopics({ topics: [topic] });
    const answer = await cold.fetchAvailableOffsets(topics, 'read_committed');
    return { topics, answer, ms: Date.now() - t };
  } finally {
    await cold.close();
  }
}

/** Reads [0, until) of a partition with the processors' reader; how many records and how long. */
async function readThrough(topic: string, partition: number, until: number): Promise<{ records: number; ms: number }> {
  const t = Date.now();
  let records = 0;
  for await (const chunk of reader!.read({ topic, partition, from: 0, until, isolationLevel: 'read_committed' }))
    records += chunk.records.length;
  return { records, ms: Date.now() - t };
}

describe('a dead leader on a 3-broker cluster', () => {
  it('stalls only its own partitions: the others are planned in the same run, nothing is lost or read twice', async () => {
    const c = cluster!;
    const topic = uniqueName('failover');
    await createTopicsReady(admin, [{ topic, numPartitions: PARTITIONS }], 60_000);
    const { stream, dispatcher, seen, errors, run } = await streamOn(c, topic);
    // A second stream over the topic, at startingOffsets latest, whose first run is the one right
    // after the kill: the dead leader's partitions start at their end once readable, not at earliest.
    const fromLatest = await streamOn(c, topic, { id: `${topic}-latest`, startingOffsets: 'latest' });

    // 1. All brokers up: everything is planned and read.
    await produce(topic, all, 10, 'a');
    expect(await run()).toMatchObject({ status: 'planned', rangesPlanned: PARTITIONS, recordsPlanned: 10 * PARTITIONS });
    await dispatcher.idle();

    // 2. More records, acknowledged by all replicas; then one leader dies without a controlled shutdown.
    await produce(topic, all, 5, 'b');
    const before = await leaders(topic);
    const victim = before.get(0)!;
    const dead = all.filter((p) => before.get(p) === victim);
    const live = all.filter((p) => before.get(p) !== victim);
    expect(live.length).toBeGreaterThan(0); // replica placement spreads leaders over the brokers
    const killedAt = Date.now();
    await kill(c, victim);

    // 3. The run right after the crash plans the live leaders' partitions and reports the others. At
    // the same time, a cold planner (new Lambda) whose first seed broker is the dead one.
    const coldRun = coldLookup(c, victim, stream, topic);
    const latestFirstRun = fromLatest.run();
    const t0 = Date.now();
    const during = await run();
    const duringMs = Date.now() - t0;
    const coldResult = await coldRun.catch((e: unknown) => (e instanceof Error ? e : new Error(String(e))));
    const latestFirst = await latestFirstRun;
    // Leadership never moves back to a dead broker: if it still leads now, it led during both calls.
    const stillLed = [...(await leaders(topic))].filter(([, l]) => l === victim).length === dead.length;
    const unavailable = during.partitions.filter((p) => p.action === 'no-offsets');
    process.stderr.write(
      `[failover] run after the kill: ${during.status} in ${duringMs} ms, planned ${during.rangesPlanned} ranges, ` +
        `unavailable ${JSON.stringify(unavailable.map((p) => [p.partition, p.unavailable]))} (${during.reason ?? unavailable[0]?.note ?? ''})\n`,
    );
    const coldFigures =
      coldResult instanceof Error
        ? String(coldResult)
        : `${coldResult.answer.offsets.length} partitions with offsets, ` +
          `unavailable ${JSON.stringify(coldResult.answer.unavailable.map((u) => [u.partition, u.code]))}, in ${coldResult.ms} ms`;
    process.stderr.write(`[failover] cold adapter, dead seed first: ${coldFigures}\n`);
    // A processor already holding a range of a dead-led partition: how long its reader takes to move.
    const readerDone = readThrough(topic, dead[0]!, 15).then((r) => {
      process.stderr.write(`[failover] reader of partition ${dead[0]} (leader ${victim} killed) read ${r.records} records in ${r.ms} ms\n`);
      return r.records;
    });

    // 4. Until re-election moves the dead leader's partitions, each run plans what it can; then them.
    const runs: Array<{ ms: number; status: string; unavailable: number; planned: number }> = [];
    let recovered: StreamPlanReport | undefined;
    while (!recovered && Date.now() - killedAt < 90_000) {
      await new Promise((r) => setTimeout(r, 1_000));
      const r0 = Date.now();
      const rep = await run();
      runs.push({ ms: Date.now() - r0, status: rep.status, unavailable: rep.unavailablePartitions, planned: rep.rangesPlanned });
      if (rep.status === 'planned' && dead.every((p) => rep.partitions.find((x) => x.partition === p)?.action === 'planned'))
        recovered = rep;
    }
    const stalledMs = Date.now() - killedAt;
    process.stderr.write(
      `[failover] dead leader's partitions ${JSON.stringify(dead)} planned again ${stalledMs} ms after the kill; runs: ${JSON.stringify(runs)}\n`,
    );
    expect(recovered).toBeDefined();
    const readRecords = await readerDone;
    // Re-elected (the stream above read them): the latest stream registers them at their end.
    const latestLater = await fromLatest.run();

    // 5. Records written after the failover, then drain: every offset exactly once.
    await produce(topic, all, 3, 'c');
    // Drained when a run finds no lag; on a loaded machine a partition may need a round more (one
    // range in flight per partition), so allow a few.
    let final = await run();
    for (let round = 0; round < 5 && final.partitions.some((p) => p.lag > 0); round++) {
      await dispatcher.idle();
      final = await run();
    }
    await dispatcher.idle();
    expect(final.partitions.map((p) => p.lag)).toEqual(all.map(() => 0));
    expect(errors).toEqual([]);
    for (const p of all) {
      const offsets = [...seen.keys()]
        .filter((k) => k.startsWith(`${p}/`))
        .map((k) => Number(k.split('/')[1]))
        .sort((a, b) => a - b);
      expect({ p, offsets }).toEqual({ p, offsets: Array.from({ length: 18 }, (_, i) => i) });
    }
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect(readRecords).toBe(15);
    // The latest stream reads only what was written after its start, the dead leader's partitions too.
    let latestFinal = await fromLatest.run();
    for (let round = 0; round < 5 && latestFinal.partitions.some((p) => p.lag > 0); round++) {
      await fromLatest.dispatcher.idle();
      latestFinal = await fromLatest.run();
    }
    await fromLatest.dispatcher.idle();
    expect(fromLatest.errors).toEqual([]);
    expect([...fromLatest.seen.keys()].sort()).toEqual(all.flatMap((p) => [15, 16, 17].map((o) => `${p}/${o}`)).sort());
    expect([...fromLatest.seen.values()].every((n) => n === 1)).toBe(true);
    expect(latestFirst).toMatchObject({ status: 'planned', registered: live.length, rangesPlanned: 0, unavailablePartitions: dead.length });
    expect(latestLater).toMatchObject({ status: 'planned', registered: dead.length, unavailablePartitions: 0 });
    expect(latestLater.partitions.filter((p) => dead.includes(p.partition)).map((p) => [p.partition, p.status, p.committed])).toEqual(
      dead.map((p) => [p, 'new', 15]),
    );

    // The run right after the crash (asserted last, so the figures above are printed either way). Both
    // calls ended before the controller fenced the dead broker (~broker.session.timeout.ms, 9 s).
    expect(stillLed).toBe(true);
    expect(during).toMatchObject({
      status: 'planned',
      rangesPlanned: live.length,
      recordsPlanned: 5 * live.length,
      unavailablePartitions: dead.length,
    });
    for (const p of unavailable) {
      expect(dead).toContain(p.partition);
      expect(['LEADER_UNREACHABLE', 'NO_LEADER']).toContain(p.unavailable);
      expect(p.note).toMatch(/^offsets unavailable this run: (LEADER_UNREACHABLE|NO_LEADER): /);
    }
    expect(unavailable.map((p) => p.partition).sort()).toEqual(dead);
    if (coldResult instanceof Error) throw coldResult;
    const { topics: coldTopics, answer: coldAnswer } = coldResult;
    expect(coldTopics).toEqual([{ topic, partitions: all, topicId: expect.any(String) }]);
    expect(coldAnswer.offsets.map((o) => o.partition).sort()).toEqual(live);
    expect(coldAnswer.unavailable.map((u) => u.partition).sort()).toEqual(dead);
  });
});

/** Whether a TCP connection to `hostPort` is refused (nothing listens: the broker process is gone). */
function refusesConnections(hostPort: string): Promise<boolean> {
  const i = hostPort.lastIndexOf(':');
  return new Promise((resolve) => {
    const socket = connect({ host: hostPort.slice(0, i), port: Number(hostPort.slice(i + 1)) });
    socket.setTimeout(2_000, () => socket.destroy(new Error('timeout')));
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'));
  });
}

describe('the operations CLI while a leader is dead (before re-election)', () => {
  it("status, plan --dry-run, peek and rewind --dry-run read the live leaders' partitions and name the dead leader's unavailable", async () => {
    const c = cluster!;
    // The test above leaves its victim dead: three brokers again first.
    for (const node of [...killed]) {
      await restartKafkaNode(c, node);
      killed.delete(node);
    }
    const topic = uniqueName('failover-ops');
    await createTopicsReady(admin, [{ topic, numPartitions: PARTITIONS }], 60_000);
    const { dispatcher, run } = await streamOn(c, topic);
    await produce(topic, all, 10, 'a');
    expect(await run()).toMatchObject({ status: 'planned', rangesPlanned: PARTITIONS });
    await dispatcher.idle(); // nothing in flight: rewind's precondition
    const beforeB = Date.now();
    await produce(topic, all, 5, 'b');

    const config = parseDeploymentConfig({ ledgerTable: tableName, streams: [streamInput(c, topic)] }, 'test');
    const env = { ...process.env, USER: 'failover-ops' };
    const cli = async (...argv: string[]) => {
      const out: string[] = [];
      const err: string[] = [];
      const t = Date.now();
      const code = await runCli(argv, { out: (x) => out.push(x), err: (x) => err.push(x) }, { env, loadConfig: () => ({ config, env }) });
      return { code, out: out.join(''), err: err.join(''), ms: Date.now() - t };
    };

    const before = await leaders(topic);
    const victim = before.get(0)!;
    const dead = all.filter((p) => before.get(p) === victim);
    const live = all.filter((p) => before.get(p) !== victim);
    expect(live.length).toBeGreaterThan(0);
    await kill(c, victim);
    // Side by side, right after the kill: the controller fences the dead broker after ~9 s.
    const [status, plan, peekLive, peekDead, rewind] = await Promise.all([
      cli('status', topic, '--json'),
      cli('plan', '--dry-run', topic, '--json'),
      cli('peek', topic, String(live[0]), '10', '--count', '2', '--json'),
      cli('peek', topic, String(dead[0]), '10', '--json'),
      cli('rewind', topic, '--to', `@${beforeB}`, '--dry-run', '--json'),
    ]);
    // Leadership never moves back to a dead broker: if it still leads now, it led during every command.
    const stillLed = [...(await leaders(topic))].filter(([, l]) => l === victim).length === dead.length;
    const nodeDead = await refusesConnections(c.nodes.get(victim)!.brokers);
    const ms = { status: status.ms, plan: plan.ms, peekLive: peekLive.ms, peekDead: peekDead.ms, rewind: rewind.ms };
    process.stderr.write(
      `[failover-ops] leader ${victim} of ${JSON.stringify(dead)} killed; CLI exit codes ${JSON.stringify([status.code, plan.code, peekLive.code, peekDead.code, rewind.code])} in ms ${JSON.stringify(ms)}; still led by it after: ${stillLed}\n` +
        `[failover-ops] status: ${status.err}[failover-ops] peek: ${peekDead.err}`,
    );
    expect(nodeDead).toBe(true);
    expect(stillLed).toBe(true);

    // status: the live leaders' partitions with their offsets, the dead leader's unavailable with the reason; exit 0.
    expect(status.code).toBe(0);
    const s = JSON.parse(status.out);
    for (const p of live) expect(s.partitions[p]).toMatchObject({ partition: p, committed: 10, latest: 15, lag: 5 });
    for (const p of dead) {
      expect(s.partitions[p].latest).toBeUndefined();
      expect(s.partitions[p].unavailable.code).toMatch(/^(LEADER_UNREACHABLE|NO_LEADER)$/);
      expect(s.partitions[p].unavailable.reason).toMatch(new RegExp(`broker ${victim}|leader`));
    }
    expect(s).toMatchObject({ unavailablePartitions: dead.length, totals: { lag: 5 * live.length, lagUnknownPartitions: dead.length } });
    expect(status.err).toMatch(new RegExp(`^warning: Kafka offsets of ${dead.length} partitions? of stream ${topic} unavailable`));

    // plan --dry-run: the live partitions planned, the others reported with the reason; exit 0.
    expect(plan.code).toBe(0);
    const [rep] = JSON.parse(plan.out);
    expect(rep).toMatchObject({
      status: 'planned',
      rangesPlanned: live.length,
      recordsPlanned: 5 * live.length,
      unavailablePartitions: dead.length,
    });
    const planUnavailable = (rep.partitions as Array<{ partition: number; unavailable?: string }>).filter((p) => p.unavailable);
    expect(planUnavailable.map((p) => p.partition).sort((a, b) => a - b)).toEqual(dead);

    // peek: a live leader's partition is read; the dead leader's fails in one line (Kafka, partition, reason), exit 1.
    expect(peekLive.code).toBe(0);
    expect(
      peekLive.out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).value),
    ).toEqual(['b0', 'b1']);
    expect(peekDead.code).toBe(1);
    expect(peekDead.out).toBe('');
    expect(peekDead.err).toMatch(
      new RegExp(
        `^error \\(KAFKA\\): Kafka: partition ${topic}/${dead[0]} unavailable \\(stream ${topic}\\): (LEADER_UNREACHABLE|NO_LEADER): [^\\n]+\\n$`,
      ),
    );

    // rewind --dry-run: the live partitions to the first record at the timestamp, the others listed unavailable; exit 0.
    expect(rewind.code).toBe(0);
    const r = JSON.parse(rewind.out);
    expect(r.partitions.map((x: { partition: number; to: number }) => [x.partition, x.to])).toEqual(live.map((p) => [p, 10]));
    expect((r.unavailable as Array<{ partition: number }>).map((u) => u.partition).sort((a, b) => a - b)).toEqual(dead);
    expect(r.change).toBeUndefined();
  });
});
