/**
 * Chaos scenario `topic-recreated`: four matching topics deleted and re-created under their names in
 * each ordering while ranges of them are in flight, and the streams driven to completion:
 *   more     re-created with more records (300) than the stream's cursor, before the next planner run
 *   fewer    re-created with fewer records (30) than the cursor
 *   retired  deleted, a planner run retires it, then re-created with 300 records
 *   twice    deleted, re-created with 50 records and deleted again within one planner interval, then
 *            re-created with 7 records after a run retired it
 * Every record of a topic that exists at the end must be applied exactly once; records of a deleted
 * topic were either applied before it went, or lie at or past the committed offset its closed
 * incarnation (or retirement) recorded. The 50 records of the topic that lived and died between two
 * planner runs left no trace any client could see; they are counted apart.
 */
import { randomUUID } from 'node:crypto';
import { checkInvariants } from './invariants';
import { readLedgerSnapshot } from './snapshot.dynamodb';
import { mapWithConcurrency } from '../../lib/concurrency';
import { parseStreamConfig, type StreamConfig } from '../../lib/config/schema';
import { createAuditLog } from '../../lib/handlers/audit-log';
import { runningTotals } from '../../lib/handlers/running-totals';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { planStream } from '../../lib/planner/run';
import { idempotencyKeyOf } from '../../lib/processor/handler-api';
import { processRange } from '../../lib/processor/process-range';
import type { Ledger } from '../../lib/ports/ledger';
import type { RangePayload } from '../../lib/ranges';
import { createScenarioTable, createScenarioTopics, scenarioName } from './scenario-resources';
import type { ChaosEnv, ScenarioResult } from './harness';
import { takeReader } from './readers';
import { scanItems } from '../support/scan';
import { prng } from './prng';
import { waitFor } from '../support/wait-for';

const ORDERINGS = ['more', 'fewer', 'retired', 'twice'] as const;
type Ordering = (typeof ORDERINGS)[number];
/** One record produced: `life` numbers the physical topics of one name (0 = the first). */
type Rec = { topic: string; offset: number; id: number; life: number };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long the broker may take to drop a deleted topic (deletion is asynchronous) and to accept its name again. */
const TOPIC_CHANGE_MS = 60_000;

/** The scenario's topics: produce (tracking every record and the topic's life), delete, create. */
function topicControl(env: ChaosEnv, id: string) {
  const topicOf = (o: Ordering) => `${id}-${o}`;
  const produced: Rec[] = [];
  const life: Record<Ordering, number> = { more: 0, fewer: 0, retired: 0, twice: 0 };
  let nextId = 1;

  const produce = async (o: Ordering, n: number): Promise<void> => {
    // A fresh producer: a connected one keeps the deleted topic's metadata.
    const producer = env.kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    try {
      const ids = Array.from({ length: n }, () => nextId++);
      const [meta] = await producer.send({
        topic: topicOf(o),
        messages: ids.map((i) => ({ key: `r-${i}`, value: JSON.stringify({ amount: i }), partition: 0 })),
      });
      const base = Number(meta?.baseOffset);
      if (!Number.isSafeInteger(base)) throw new Error(`chaos topic-recreated: produce to ${topicOf(o)} was not acknowledged`);
      ids.forEach((i, k) => produced.push({ topic: topicOf(o), offset: base + k, id: i, life: life[o] }));
    } finally {
      await producer.disconnect();
    }
  };
  const listed = async (topic: string) => (await env.admin.listTopics()).includes(topic);
  const remove = async (o: Ordering): Promise<void> => {
    await env.admin.deleteTopics({ topics: [topicOf(o)], timeout: 10_000 });
    await waitFor(`${topicOf(o)} gone from the topic listing`, () => listed(topicOf(o)), {
      until: (isListed) => !isListed,
      timeoutMs: TOPIC_CHANGE_MS,
    });
  };
  const create = async (o: Ordering): Promise<void> => {
    // Retried while it throws: the broker may still be letting go of the deleted topic.
    const created = async () => {
      await createScenarioTopics(env, [{ topic: topicOf(o), numPartitions: 1 }], 10_000);
      return true;
    };
    await waitFor(`${topicOf(o)} to be created again`, created, { timeoutMs: TOPIC_CHANGE_MS, intervalMs: 200 });
  };
  const recreate = async (o: Ordering, n: number): Promise<void> => {
    await remove(o);
    life[o]++;
    await create(o);
    await produce(o, n);
  };

  return { topicOf, produced, life, produce, listed, remove, create, recreate };
}

/** The two streams over the scenario's topics: exactly-once running totals, and the at-least-once audit log. */
function streamConfig(id: string, suffix: 'eo' | 'al', sinkTable: string): StreamConfig {
  return parseStreamConfig(
    {
      id: `${id}-${suffix}`,
      kafka: { brokers: (process.env.KAFKA_BROKERS as string).split(',') },
      topicPattern: `${id}-(more|fewer|retired|twice)`,
      handler:
        suffix === 'eo'
          ? { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable }
          : { module: 'audit-log', mode: 'at-least-once' },
      // Small ranges, so ranges of every topic are in flight when the topics go.
      maxOffsetsPerTrigger: 200,
      maxAttempts: 12,
      // A time budget of a few seconds: the scenario is about topic identity, not range sizing.
      processor: { timeoutMs: 4000, leaseMs: 5000 },
      triggerIntervalMs: 1000,
    },
    'chaos topic-recreated',
  );
}

/** Runs the scenario; the result has the harness's shape, so it joins the RELIABILITY table. */
export async function runTopicRecreated(env: ChaosEnv, seed: number, opts: { budgetMs?: number } = {}): Promise<ScenarioResult> {
  const t0 = Date.now();
  const random = prng(seed);
  const id = scenarioName('topic-recreated');
  const problems: string[] = [];
  /** Lives that no planner run ever saw (created and deleted between two runs). */
  const unseenLives = new Set<string>();
  const { topicOf, produced, life, produce, listed, remove, create, recreate } = topicControl(env, id);
  const ledger = createDynamoLedger({ client: env.ddb, tableName: env.ledgerTable });
  const sinkTable = await createScenarioTable(env, 'sink');
  const auditTable = await createScenarioTable(env, 'audit');
  const audit = createAuditLog({ tableName: auditTable, client: env.ddb });
  for (const o of ORDERINGS) await create(o);
  for (const o of ORDERINGS) await produce(o, 100);
  const streams = [streamConfig(id, 'eo', sinkTable), streamConfig(id, 'al', sinkTable)];

  let invocations = 0;
  let processorErrors = 0;
  let recreatedReported = 0;
  let failedPartitions = 0;
  const statuses: Record<string, number> = {};
  const invoke = async (stream: StreamConfig, range: RangePayload): Promise<void> => {
    invocations++;
    const reader = takeReader(env);
    try {
      const res = await processRange(
        {
          ledger,
          readerFor: async () => reader,
          handlerFor: (s) => (s.handler?.module === 'running-totals' ? runningTotals : audit),
          maxChunkRecords: 50,
          retryBaseMs: 5,
        },
        { stream, range, deadlineAtMs: Date.now() + 60_000 },
      );
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    } catch {
      processorErrors++;
    } finally {
      env.readers.push(reader);
    }
  };
  const round = async (between?: () => Promise<void>): Promise<void> => {
    const queue: Array<{ stream: StreamConfig; range: RangePayload }> = [];
    for (const stream of streams) {
      const rep = await planStream(
        {
          ledger,
          metadataFor: (s) => env.metadata.forStream(s),
          dispatcher: {
            async dispatch(ranges) {
              for (const range of ranges) queue.push({ stream, range });
              return ranges.map(() => ({ ok: true as const }));
            },
          },
          plannerLeaseMs: 5000,
          ownerToken: randomUUID(),
        },
        stream,
        { dryRun: false, nowMs: Date.now() },
      );
      recreatedReported += rep.recreated.length;
      failedPartitions += rep.failedPartitions;
    }
    // Topics change while the ranges just planned are not read yet.
    await between?.();
    const order = queue
      .map((q) => ({ q, k: random() }))
      .sort((a, b) => a.k - b.k)
      .map((x) => x.q);
    await mapWithConcurrency(order, 8, (q) => invoke(q.stream, q.range));
  };

  const ends = async (): Promise<Map<string, number>> => {
    const out = new Map<string, number>();
    for (const o of ORDERINGS) {
      if (!(await listed(topicOf(o)))) continue;
      const [p0] = await env.admin.fetchTopicOffsets(topicOf(o));
      out.set(topicOf(o), Number(p0?.high ?? 0));
    }
    return out;
  };
  const complete = async (): Promise<boolean> => {
    const end = await ends();
    for (const s of streams) {
      const parts = await ledger.readPartitions(s.id);
      for (const o of ORDERINGS) {
        const p = parts.find((x) => x.topic === topicOf(o));
        if (!p || p.status !== 'active' || (p.incarnation ?? 0) === 0 || p.committed < (end.get(topicOf(o)) ?? Infinity)) return false;
      }
    }
    return true;
  };

  const budget = opts.budgetMs ?? 40_000;
  let rounds = await eventRounds(round, { topicOf, life, produce, remove, create, recreate }, unseenLives);
  let finished = false;
  while (Date.now() - t0 < budget) {
    await round();
    rounds++;
    if (process.env.CHAOS_DEBUG) await debugRound(ledger, streams[0]!, Date.now() - t0, ends);
    if (await complete()) {
      finished = true;
      break;
    }
    await sleep(50);
  }
  if (!finished) problems.push(`did not complete within ${budget} ms (${rounds} rounds)`);

  // ---- Checks ---------------------------------------------------------------------------------
  const [eo, al] = streams as [StreamConfig, StreamConfig];
  const snaps = [await readLedgerSnapshot(env.ddb, env.ledgerTable, eo.id), await readLedgerSnapshot(env.ddb, env.ledgerTable, al.id)];
  const violations = snaps.flatMap(checkInvariants);
  const sink = new Map((await scanItems(env.ddb, sinkTable)).map((i) => [i.pk as string, (i.count as number | undefined) ?? 1]));
  const auditKeys = new Map((await scanItems(env.ddb, auditTable)).map((i) => [i.pk as string, 1]));
  const counts = account({ produced, life, unseenLives, snaps, sink, auditKeys, topicOf, problems });
  const { expected, applied, duplicates, losses, auditLosses, gone, vanished } = counts;
  if (recreatedReported !== 8)
    problems.push(`planner runs reported ${recreatedReported} re-created incarnations (TopicRecreated), expected 8 (4 topics x 2 streams)`);
  if (failedPartitions) problems.push(`${failedPartitions} partitions failed (OFFSET_REGRESSION?)`);
  const refused = statuses.parked ?? 0;

  const result: ScenarioResult = {
    scenario: 'topic-recreated',
    seed,
    injected: injectedText(refused, gone, vanished),
    produced: produced.length,
    expected,
    applied,
    duplicates,
    losses,
    auditLosses,
    auditDuplicates: audit.duplicates(),
    dataLoss: 0,
    deadLetters: 0,
    stopped: 0,
    retired: gone + vanished,
    violations,
    problems,
    rounds,
    invocations,
    processorErrors,
    statuses,
    wallMs: Date.now() - t0,
    ok: false,
  };
  result.ok =
    problems.length === 0 && violations.length === 0 && duplicates === 0 && losses === 0 && auditLosses === 0 && applied === expected;
  return result;
}

/** CHAOS_DEBUG: the first stream's partitions and the log ends after a round. */
async function debugRound(ledger: Ledger, stream: StreamConfig, atMs: number, ends: () => Promise<Map<string, number>>): Promise<void> {
  const parts = await ledger.readPartitions(stream.id);
  console.log(
    atMs,
    JSON.stringify(parts.map((p) => [p.topic.slice(-6), p.status, p.incarnation, p.committed, p.nextFrom])),
    JSON.stringify([...(await ends())]),
  );
}

/** What the scenario injected, for the report. */
function injectedText(refused: number, gone: number, vanished: number): string {
  return (
    `4 topics with ranges in flight: re-created with more records (100 -> 300), with fewer (100 -> 30), re-created after a run retired it (300), ` +
    `and deleted, re-created with 50 and deleted again within one interval, then re-created (7); ${refused} stale range invocations refused ` +
    `(TOPIC_RECREATED or PARTITION_DELETED), ${gone} records of deleted topics never read (recorded by their closed incarnation), ` +
    `${vanished} records of the topic that lived between two runs`
  );
}

/**
 * The scenario's first three rounds, the topics changing between planning and processing in the
 * second and third; returns the number of rounds.
 */
async function eventRounds(
  round: (between?: () => Promise<void>) => Promise<void>,
  ctl: Pick<ReturnType<typeof topicControl>, 'topicOf' | 'life' | 'produce' | 'remove' | 'create' | 'recreate'>,
  unseenLives: Set<string>,
): Promise<number> {
  const { topicOf, life, produce, remove, create, recreate } = ctl;
  await round();
  // Event A, between planning and processing: ranges of every topic are in flight.
  await round(async () => {
    await recreate('more', 300);
    await recreate('fewer', 30);
    await recreate('twice', 50);
    await remove('twice');
    unseenLives.add(`${topicOf('twice')}#${life.twice}`);
    await remove('retired');
  });
  // A run sees 'more' and 'fewer' re-created and retires 'retired' and 'twice'; then they come back.
  await round(async () => {
    life.retired++;
    await create('retired');
    await produce('retired', 300);
    life.twice++;
    await create('twice');
    await produce('twice', 7);
  });
  return 3;
}

type Snapshot = Awaited<ReturnType<typeof readLedgerSnapshot>>;

/**
 * Record-by-record accounting: records of the topics that exist at the end are applied once (sink)
 * and seen (audit log); unread records of deleted topics lie past what their closed incarnation
 * recorded as committed. Appends what does not hold to `problems`.
 */
function account(c: {
  produced: Rec[];
  life: Record<Ordering, number>;
  unseenLives: Set<string>;
  snaps: Snapshot[];
  sink: Map<string, number>;
  auditKeys: Map<string, number>;
  topicOf: (o: Ordering) => string;
  problems: string[];
}): { expected: number; applied: number; duplicates: number; losses: number; auditLosses: number; gone: number; vanished: number } {
  const { produced, life, unseenLives, snaps, sink, auditKeys, topicOf, problems } = c;
  const final = new Map(ORDERINGS.map((o) => [topicOf(o), life[o]]));
  /** The ledger incarnation that read life `n` of a topic (the unseen life of 'twice' had none). */
  const incarnationOf = (r: Rec): number => (r.topic === topicOf('twice') && r.life === 2 ? 1 : r.life);

  let expected = 0;
  let applied = 0;
  let duplicates = 0;
  let losses = 0;
  let auditLosses = 0;
  let gone = 0;
  let vanished = 0;
  for (const [, count] of sink) duplicates += Math.max(0, count - 1);
  for (const r of produced) {
    const inSink = sink.has(`r-${r.id}`);
    if (inSink) applied++;
    if (final.get(r.topic) === r.life) {
      expected++;
      if (!inSink) losses++;
      if (!auditKeys.has(idempotencyKeyOf(r.topic, 0, r.offset, incarnationOf(r)))) auditLosses++;
      continue;
    }
    if (inSink) {
      expected++; // read before its topic went: must be applied once, like any other
      continue;
    }
    if (unseenLives.has(`${r.topic}#${r.life}`)) {
      vanished++;
      continue;
    }
    // Unread records of a deleted topic: the ledger must have recorded that its cursor stopped before them.
    gone++;
    for (const snap of snaps) {
      const c = (snap.closed ?? []).find((x) => x.topic === r.topic && x.incarnation === incarnationOf(r));
      if (!c)
        problems.push(
          `${snap.meta?.stream}: record ${r.topic}/0/${r.offset} of a deleted topic was not read and no closed incarnation records it`,
        );
      else if (r.offset < c.committed)
        problems.push(
          `${snap.meta?.stream}: record ${r.topic}/0/${r.offset} lies below the closed incarnation's committed ${c.committed} but was not applied`,
        );
    }
  }
  for (const snap of snaps) {
    for (const o of ORDERINGS) {
      const p = snap.partitions.find((x) => x.topic === topicOf(o));
      const closed = (snap.closed ?? []).filter((x) => x.topic === topicOf(o));
      if (p?.incarnation !== 1 || p.status !== 'active')
        problems.push(`${snap.meta?.stream}: ${o} is ${p?.status} incarnation ${p?.incarnation}, expected active incarnation 1`);
      if (closed.length !== 1) problems.push(`${snap.meta?.stream}: ${o} has ${closed.length} closed incarnations, expected 1`);
    }
  }
  return { expected, applied, duplicates, losses, auditLosses, gone, vanished };
}
