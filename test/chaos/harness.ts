/**
 * The chaos harness (issue #7): runs a stream over several partitions against the real broker and
 * the DynamoDB emulator with one fault injected, drives it to completion (planner runs, processors,
 * retries), then checks the exactly-once sink, the at-least-once audit log and the ledger invariants.
 *
 * Every scenario runs two streams over the same topics: `<id>-eo` (running-totals, exactly-once into
 * a sink table) and `<id>-al` (audit-log, at-least-once). Each produced record has a unique key
 * (`r-<n>`, amount n), so the sink shows every duplicate and every loss record by record.
 * Faults are drawn from a seeded PRNG; runs are bounded by a wall-clock budget per scenario.
 * What a scenario creates (`chaos-<what>-<time>-<hex>`) is deleted when it ends, passed or failed.
 *
 * Most scenarios are a module of scenarios/ on the shared driver (driver.ts): its knobs, its fault,
 * and its checks, among them that the fault fired. topic-recreated, large-batch, load and
 * freeze-thaw have runners of their own.
 */
import { exitCleanups } from '../../lib/local/exit-cleanup';
import { noResources, removeResources, type Removal } from '../../lib/local/tool-cleanup';
import { runRounds } from './driver';
import type { ChaosEnv } from './env';
import type { Violation } from './invariants';
import { runFreezeThaw } from './freeze-thaw';
import { runLargeBatch } from './large-batch';
import { runLoad } from './load';
import { runOnCluster, runOnPrivateBroker } from './private-kafka';
import { runThroughProxies } from './proxied';
import { NETWORK_SCENARIOS, ROUND_SCENARIOS } from './scenarios';
import { CONTINUOUS_VARIANTS, variedScenario } from './scenarios/continuous';
import { runTopicRecreated } from './topic-recreated';

export { closeChaosEnv, openChaosEnv, type ChaosEnv } from './env';

export const SCENARIOS = [
  'baseline',
  'processor-kill',
  'duplicate-invoke',
  'planners-2',
  'planners-3',
  'planner-kill',
  'partitions-added',
  'retention-continue',
  'retention-fail',
  'dynamodb-faults',
  'deadline',
  'poison-record',
  'broker-restart',
  'topic-deleted',
  'forged-payload',
  'skewed-clock',
  'leader-killed',
  'topic-recreated',
  'large-batch',
  'load',
  'network-latency',
  'network-trickle',
  'network-reset',
  'network-black-hole',
  'late-response',
  'freeze-thaw',
  ...CONTINUOUS_VARIANTS,
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

export type ScenarioResult = {
  scenario: ScenarioName;
  seed: number;
  injected: string;
  produced: number;
  /** Records the exactly-once sink must hold (produced minus recorded data loss, dead letters, stopped partitions). */
  expected: number;
  /** Distinct records in the sink. */
  applied: number;
  /** Extra applications in the exactly-once sink (must be 0). */
  duplicates: number;
  /** Records neither applied, nor dead-lettered, nor in a recorded data-loss span, nor held by a stopped partition (must be 0). */
  losses: number;
  /** Records the audit log (at-least-once) is missing (must be 0). */
  auditLosses: number;
  /** Redeliveries the audit log saw (allowed: at least once). */
  auditDuplicates: number;
  /** Records in recorded data-loss spans (expected only in retention scenarios). */
  dataLoss: number;
  deadLetters: number;
  /** Records behind a partition stopped on purpose (failOnDataLoss=true). */
  stopped: number;
  /** Records of a deleted topic never read before its partitions were retired (topic-deleted only). */
  retired: number;
  violations: Violation[];
  /** Scenario-specific expectations that failed. */
  problems: string[];
  rounds: number;
  invocations: number;
  processorErrors: number;
  /** Processor outcomes by status. */
  statuses: Record<string, number>;
  wallMs: number;
  /** Network scenarios: from the fault's end to the next commit (ms). */
  recoveryMs?: number;
  ok: boolean;
  /** What was deleted when the scenario ended (a private broker's topics go with the broker instead). */
  removed?: { topics: string[]; tables: string[] };
};

/**
 * Runs one scenario end to end and checks it; never throws for a failed check (see `ok`, `problems`).
 * When it ends, passed, failed or interrupted (Ctrl-C in a soak), the topics and tables it created are
 * deleted; a deletion that fails is a problem of the scenario.
 */
export async function runScenario(
  env: ChaosEnv,
  scenario: ScenarioName,
  seed: number,
  opts: { budgetMs?: number } = {},
): Promise<ScenarioResult> {
  // A producer of its own: kafkajs asks again for every topic a producer ever wrote to, so a shared
  // one would fail in every later scenario once this one's topics are deleted.
  const producer = env.kafka.producer();
  await producer.connect();
  const own: ChaosEnv = { ...env, producer, created: noResources() };
  let removal: Removal | undefined;
  const cleanUp = async (): Promise<void> => {
    await producer.disconnect().catch(() => undefined);
    removal = await removeResources(own.created, { admin: env.admin, dynamo: env.ddb });
  };
  const res = await exitCleanups.around(cleanUp, () => runScenarioOn(own, scenario, seed, opts));
  const errors = removal?.errors ?? ['no clean-up ran'];
  return {
    ...res,
    removed: { topics: removal?.topics ?? [], tables: removal?.tables ?? [] },
    problems: [...res.problems, ...errors.map((e) => `clean-up: ${e}`)],
    ok: res.ok && errors.length === 0,
  };
}

/**
 * The scenario's own runner. `broker-restart` and `leader-killed` run against a private broker or
 * cluster of their own (started there, stopped in `finally`), so the shared test broker other test
 * files use is never restarted.
 */
function runScenarioOn(env: ChaosEnv, scenario: ScenarioName, seed: number, opts: { budgetMs?: number }): Promise<ScenarioResult> {
  if (scenario === 'topic-recreated') return runTopicRecreated(env, seed, opts);
  if (scenario === 'large-batch') return runLargeBatch(env, seed, opts);
  if (scenario === 'load') return runLoad(env, seed, opts);
  if (scenario === 'freeze-thaw') return runFreezeThaw(env, seed, opts);
  const rounds = ROUND_SCENARIOS[scenario]();
  // A continuous variant runs where the scenario it varies runs.
  if (variedScenario(scenario) === 'leader-killed') return runOnCluster(env, scenario, rounds, seed, opts);
  if (variedScenario(scenario) === 'broker-restart') return runOnPrivateBroker(env, scenario, rounds, seed, opts);
  if (NETWORK_SCENARIOS.has(scenario)) return runThroughProxies(env, scenario, rounds, seed, opts);
  return runRounds(env, scenario, rounds, seed, opts);
}

/** The RELIABILITY.md table. */
export function reportMarkdown(results: ScenarioResult[], meta: { seed: number; wallMs: number; command: string }): string {
  const rows = results.map(
    (r) =>
      `| ${r.scenario} | ${r.injected} | ${r.produced} | ${r.applied}/${r.expected} applied once${r.deadLetters ? `, ${r.deadLetters} dead-lettered` : ''}${r.dataLoss ? `, ${r.dataLoss} in recorded data-loss spans` : ''}${r.stopped ? `, ${r.stopped} held by stopped partitions` : ''}${r.retired ? `, ${r.retired} never read on retired partitions of the deleted topic` : ''} | ${r.duplicates} (audit log: ${r.auditDuplicates} redeliveries) | ${r.losses} (audit log: ${r.auditLosses}) | ${r.violations.length} | ${r.recoveryMs === undefined ? '-' : `${(r.recoveryMs / 1000).toFixed(2)} s`} | ${r.ok ? 'pass' : `FAIL: ${[...r.problems, ...r.violations.map((v) => `${v.invariant} ${v.partition}: ${v.message}`)].join('; ')}`} |`,
  );
  return [
    '# Reliability',
    '',
    `Generated by \`${meta.command}\` (test/chaos/suite.ts); do not edit by hand. Seed ${meta.seed}; ${results.length} scenarios in ${(meta.wallMs / 1000).toFixed(1)} s against the local Kafka broker and DynamoDB emulator.`,
    '',
    'Each scenario runs two streams over the same topics: `running-totals` (exactly-once into a DynamoDB sink, every record a unique key) and `audit-log` (at-least-once). The run is driven to completion (planner rounds, processors, retries), then the sink is compared record by record with what was produced and the ledger is checked for invariants I1 (tiling), I2 (cursor and progress bounds) and I6 (nothing silently skipped).',
    '',
    '| scenario | injected | records produced | exactly-once sink | duplicates in sink | losses | invariant violations | time to recover | result |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    '"duplicates in sink" counts extra applications in the exactly-once sink (must be 0); the audit log may see redeliveries (at least once) and must lose nothing. "losses" counts records neither applied, nor dead-lettered, nor inside a data-loss span the ledger recorded, nor behind a partition stopped on purpose (failOnDataLoss=true), nor (topic-deleted only) at or past the committed offset of a partition of the deleted topic that the planner retired. Invariant violations come from `checkInvariants` (test/chaos/invariants.ts) over both streams\' ledger snapshots.',
    '',
    'A longer soak loops every scenario with fresh seeds: `npm run chaos -- --minutes 30 [--seed n]` (prints a JSON summary; exit 1 on any failure).',
    '',
    '`broker-restart` runs against a private broker started for the scenario (the shared test broker is never restarted) and restarts it on the same data dir and port while processors read.',
    '',
    '`leader-killed` runs against a private 3-broker cluster started for the scenario and kills the leader of some partitions between two planner rounds, so the following planner runs meet the dead leader before the controller fences it.',
    '',
    '"time to recover" (network scenarios and `freeze-thaw`): from the end of the fault to the next commit; for `freeze-thaw`, from the start of the thawed planner\'s invocation to the new records committed. Goal: within 5 s of a thaw, and no scenario waiting out a 30 s default timeout.',
    '',
    "`network-latency`, `network-trickle`, `network-reset`, `network-black-hole` and `late-response` run against a private broker the streams reach only through a Toxiproxy proxy, over SASL_SSL with SCRAM-SHA-512 (its proxied listener advertises the proxy, so every connection after bootstrap goes through it too) and the DynamoDB emulator through another proxy (test/chaos/proxied.ts, test/support/fault-proxy.ts), with the clients the functions make (`createKafka`, `dynamoClientFromEnv`), so their timeouts are what is tested. Each asserts that its fault fired from what those clients met: attempts, their durations and errors, kafkajs's connection lines.",
    '',
    "`freeze-thaw` runs what `sls package` ships under Lambda's runtime emulator, behind NATs that forget a connection idle for 4 s without a word (test/support/idle-nat.ts; Toxiproxy cannot: a toxic reaches every connection of its proxy, new ones included), and stops the warm planner and processor with SIGSTOP for 14 s, then for 6 s.",
    '',
    "`planners-2`, `planners-3` and `planner-kill` run the planner as its schedule does, in loops (test/chaos/loops.ts): a delivery every 2 s, each invocation ticking both streams every trigger interval for 4 s unless the next one asks it to hand over. `planners-2` and `planners-3` deliver each schedule 2 or 3 times (up to 150 ms apart) and run 2 or 3 one-shot planner runs at once every round beside the loops; no two invocations' ticks of a stream may interleave. `planner-kill` runs loops only and kills two of them mid-loop, at a seeded tick and step (nothing the killed invocation calls answers from then on); rather than wait out the loop lease (30 s at least), the store time the loops and processors read moves on past it, and the next delivery must take each dead loop over after its lease expired and tick.",
    '',
  ].join('\n');
}
