/**
 * Chaos scenario `large-batch`: folded exactly-once batches at scale. 200,000 records of 6,000
 * accounts over 2 partitions, one range per partition (100,000 records each), folded into batches
 * of 20,000-100,000 records (thousands of items, written in marked groups of 100). Processors are
 * killed at random points, most of them *between* the writes of one batch (after the batch is
 * recorded, after a group of writes, before progress moves), every range is invoked twice at once,
 * and each retry folds with another budget. The sink must hold, account by account, exactly the
 * total and count that were produced.
 */
import { randomUUID } from 'node:crypto';
import { checkInvariants } from './invariants';
import { readLedgerSnapshot } from './snapshot.dynamodb';
import { parseStreamConfig } from '../../lib/config/schema';
import { runningTotals } from '../../lib/handlers/running-totals';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { planStream } from '../../lib/planner/run';
import { processRange, type ProcessorStep } from '../../lib/processor/process-range';
import type { RangePayload } from '../../lib/ranges';
import { createScenarioTable, createScenarioTopics, scenarioName } from './scenario-resources';
import type { ChaosEnv, ScenarioResult } from './harness';
import { NO_SIDE_FIGURES } from './run-checks';
import { takeReader } from './readers';
import { scanTotals } from '../support/scan';
import { prng } from './prng';
import { killable } from './killable';

const PARTITIONS = 2;
const RECORDS = 200_000;
const ACCOUNTS = 6_000;
const KILL_POINTS: ProcessorStep[] = ['handled', 'batch-begun', 'sink-written', 'sink-written', 'sink-written', 'committed'];

const debug = (line: string): void => {
  if (process.env.CHAOS_DEBUG) console.log(`[large-batch] ${line}`);
};

const amountOf = (i: number): number => (i % 97) + 1;

/** Runs the scenario; the result has the harness's shape, so it joins the RELIABILITY table. */
export async function runLargeBatch(env: ChaosEnv, seed: number, opts: { budgetMs?: number } = {}): Promise<ScenarioResult> {
  const t0 = Date.now();
  const random = prng(seed);
  const topic = scenarioName('large-batch');
  const problems: string[] = [];
  await createScenarioTopics(env, [{ topic, numPartitions: PARTITIONS }]);
  const expected = await produceAccounts(env, topic);
  debug(`produced ${RECORDS} records in ${Date.now() - t0} ms`);
  const sinkTable = await createScenarioTable(env, 'large-batch-sink');
  const ledger = createDynamoLedger({ client: env.ddb, tableName: env.ledgerTable });
  const stream = parseStreamConfig(
    {
      id: `${topic}-eo`,
      kafka: { brokers: (process.env.KAFKA_BROKERS as string).split(',') },
      topics: [topic],
      handler: { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable },
      maxAttempts: 60,
      // Short invocations and leases: deadlines cut batches, killed holders' leases lapse soon, and a
      // slow holder can lose its lease to the twin invocation while it is still writing.
      processor: { timeoutMs: 6_000, leaseMs: 7_000 },
    },
    'chaos large-batch',
  );

  const counts = { invocations: 0, errors: 0, kills: 0, killedAt: {} as Record<string, number> };
  const statuses: Record<string, number> = {};
  const invoke = async (range: RangePayload, leaseToken: string): Promise<void> => {
    counts.invocations++;
    const dead = { v: false };
    const killAt = random() < 0.7 ? KILL_POINTS[Math.floor(random() * KILL_POINTS.length)] : undefined;
    const nth = 1 + Math.floor(random() * 8);
    let seen = 0;
    const reader = takeReader(env);
    try {
      const res = await processRange(
        {
          ledger: killable(ledger, dead),
          readerFor: async () => reader,
          handlerFor: () => runningTotals,
          leaseToken,
          fold: { maxRecords: 20_000 + Math.floor(random() * 80_000) },
          afterStep: (step) => {
            // The kill this scenario is about, between the writes of one batch, happens for sure (the
            // first invocation to get there); the others are drawn.
            const firstBetweenWrites = step === 'sink-written' && counts.killedAt['sink-written'] === undefined;
            if (!firstBetweenWrites && (step !== killAt || ++seen !== nth)) return;
            dead.v = true;
            counts.kills++;
            counts.killedAt[step] = (counts.killedAt[step] ?? 0) + 1;
            throw new Error(`chaos: processor killed at ${step}`);
          },
        },
        { stream, range, deadlineAtMs: Date.now() + 4_000 + Math.floor(random() * 4_000) },
      );
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    } catch {
      counts.errors++;
    } finally {
      env.readers.push(reader);
    }
  };

  let queueWasEmpty = false;
  const round = async (): Promise<void> => {
    const queue: RangePayload[] = [];
    await planStream(
      {
        ledger,
        metadataFor: (s) => env.metadata.forStream(s),
        dispatcher: {
          async dispatch(ranges) {
            queue.push(...ranges);
            return ranges.map(() => ({ ok: true as const }));
          },
        },
        plannerLeaseMs: 5000,
        ownerToken: randomUUID(),
      },
      stream,
      { dryRun: false, nowMs: Date.now() },
    );
    queueWasEmpty = queue.length === 0;
    // Every range twice at once: one of the two holds the lease, the other is refused or takes over.
    await Promise.all(queue.flatMap((r) => [invoke(r, randomUUID()), invoke(r, randomUUID())]));
  };

  const complete = async (): Promise<boolean> => {
    const parts = await ledger.readPartitions(stream.id);
    return parts.length === PARTITIONS && parts.every((p) => p.committed >= (expected.ends.get(p.partition) ?? Infinity));
  };

  const budget = opts.budgetMs ?? 150_000;
  let rounds = 0;
  let finished = false;
  while (Date.now() - t0 < budget) {
    await round();
    rounds++;
    debug(`round ${rounds} at ${Date.now() - t0} ms: ${JSON.stringify(statuses)}, ${counts.kills} kills`);
    if (await complete()) {
      finished = true;
      break;
    }
    if (queueWasEmpty) await new Promise((r) => setTimeout(r, 250));
  }
  if (!finished) problems.push(`did not complete within ${budget} ms (${rounds} rounds)`);

  const snap = await readLedgerSnapshot(env.ddb, env.ledgerTable, stream.id);
  const violations = checkInvariants(snap);
  const sink = await scanTotals(env.ddb, sinkTable);
  const check = compare(expected.perAccount, sink, problems);
  if ((counts.killedAt['sink-written'] ?? 0) === 0) problems.push('no processor was killed between the writes of a batch');
  return {
    scenario: 'large-batch',
    seed,
    injected:
      `${RECORDS.toLocaleString('en-US')} records of ${ACCOUNTS.toLocaleString('en-US')} accounts in ${PARTITIONS} ranges of ` +
      `${(RECORDS / PARTITIONS).toLocaleString('en-US')}, folded in batches of 20,000-100,000 records; every range invoked twice at once; ` +
      `${counts.kills} processors killed (${Object.entries(counts.killedAt)
        .map(([k, n]) => `${n} at ${k}`)
        .join(', ')})`,
    produced: RECORDS,
    expected: RECORDS,
    applied: check.applied,
    duplicates: check.duplicates,
    losses: check.losses,
    ...NO_SIDE_FIGURES,
    violations,
    problems,
    rounds,
    invocations: counts.invocations,
    processorErrors: counts.errors,
    statuses,
    wallMs: Date.now() - t0,
    ok: finished && violations.length === 0 && problems.length === 0 && check.duplicates === 0 && check.losses === 0,
  };
}

/** Produces RECORDS records of ACCOUNTS accounts (key = account); returns the expected sink and the log ends. */
async function produceAccounts(env: ChaosEnv, topic: string) {
  const perAccount = new Map<string, { total: number; count: number }>();
  const batch = 5_000;
  for (let start = 0; start < RECORDS; start += batch) {
    const messages = Array.from({ length: Math.min(batch, RECORDS - start) }, (_, j) => {
      const i = start + j;
      const account = `acct-${i % ACCOUNTS}`;
      const acc = perAccount.get(account) ?? { total: 0, count: 0 };
      acc.total += amountOf(i);
      acc.count += 1;
      perAccount.set(account, acc);
      return { key: account, value: JSON.stringify({ account, amount: amountOf(i) }) };
    });
    await env.producer.send({ topic, messages });
  }
  const ends = new Map<number, number>();
  for (const o of await env.admin.fetchTopicOffsets(topic)) ends.set(o.partition, Number(o.high));
  return { perAccount, ends };
}

/** Records applied, applied twice and missing, account by account (a wrong total with the right count is a problem too). */
function compare(
  expected: Map<string, { total: number; count: number }>,
  sink: Map<string, { total: number; count: number }>,
  problems: string[],
): { applied: number; duplicates: number; losses: number } {
  let applied = 0;
  let duplicates = 0;
  let losses = 0;
  let wrongTotals = 0;
  for (const [account, want] of expected) {
    const got = sink.get(account) ?? { total: 0, count: 0 };
    applied += got.count;
    duplicates += Math.max(0, got.count - want.count);
    losses += Math.max(0, want.count - got.count);
    if (got.count === want.count && got.total !== want.total) wrongTotals++;
  }
  const extra = [...sink.keys()].filter((k) => !expected.has(k)).length;
  if (wrongTotals) problems.push(`${wrongTotals} accounts have the right count but the wrong total`);
  if (extra) problems.push(`${extra} sink items for accounts never produced`);
  return { applied, duplicates, losses };
}
