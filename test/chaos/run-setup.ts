/**
 * A chaos run set up: the scenario's knobs over the base ones, its ledger (faulty or not), sink and
 * audit tables, topics and two streams over them, and the records produced before the first round.
 */
import { parseStreamConfig, type StreamConfig } from '../../lib/config/schema';
import { createAuditLog } from '../../lib/handlers/audit-log';
import { createDynamoLedger } from '../../lib/ledger/ledger.dynamodb';
import { toolResourceName } from '../../lib/local/tool-names';
import type { ChaosEnv } from './env';
import { faultyDynamo } from './faulty-dynamo';
import { prng } from './prng';
import type { ScenarioName } from './harness';
import { createScenarioTable, createScenarioTopics } from './scenario-resources';
import type { DriverOpts, Knobs, Produced, RoundScenario, Run, Tally } from './scenario';

const BASE: Knobs = {
  partitions: 3,
  perPartition: 80,
  // Small ranges: several planner rounds per partition.
  config: { maxOffsetsPerTrigger: 90, maxAttempts: 12, processor: { timeoutMs: 1000, leaseMs: 1500 }, triggerIntervalMs: 1000 },
  planners: 1,
  duplicateInvoke: false,
  killProb: 0,
  handlerDelayMs: 0,
  faultFraction: 0,
  poisonEvery: 0,
  pattern: false,
};

function newTally(): Tally {
  return {
    rounds: 0,
    invocations: 0,
    processorErrors: 0,
    plannerFailures: 0,
    statuses: {},
    inFlight: 0,
    dispatched: 0,
    processorKills: 0,
    killedAt: [],
    killedInvocations: 0,
    faults: { injected: 0, met: 0 },
    slowestRound: { totalMs: 0, planMs: 0, processMs: 0, checkMs: 0 },
  };
}

/** The scenario's two streams: `<id>-eo` (running-totals, exactly-once into the sink) and `<id>-al` (audit-log, at-least-once). */
function streamsOf(run: Pick<Run, 'id' | 'topic1' | 'knobs' | 'opts' | 'sinkTable' | 'scenario'>): StreamConfig[] {
  const { broker, cluster, network } = run.opts;
  const mk = (suffix: 'eo' | 'al'): StreamConfig =>
    parseStreamConfig(
      {
        id: `${run.id}-${suffix}`,
        kafka: {
          brokers: (broker?.brokers ?? cluster?.brokers ?? network?.brokers ?? (process.env.KAFKA_BROKERS as string)).split(','),
          ...broker?.kafka,
          ...network?.settings,
        },
        ...(run.knobs.pattern ? { topicPattern: `${run.id}-t[0-9]+` } : { topics: [run.topic1] }),
        handler:
          suffix === 'eo'
            ? { module: 'running-totals', mode: 'dynamodb-exactly-once', sinkTable: run.sinkTable }
            : { module: 'audit-log', mode: 'at-least-once' },
        ...Object.fromEntries(Object.entries(run.knobs.config).filter(([, v]) => v !== undefined)),
      },
      `chaos ${run.scenario}`,
    );
  return [mk('eo'), mk('al')];
}

/** Produces `n` records to a partition, each a unique key and amount (every `poisonEvery`-th not JSON), recorded in `run.produced`. */
async function produce(run: Run, topic: string, partition: number, n: number, nextId: { v: number }): Promise<void> {
  const batch = Array.from({ length: n }, () => {
    const nid = nextId.v++;
    return { id: nid, poison: run.knobs.poisonEvery > 0 && nid % run.knobs.poisonEvery === 0 };
  });
  const sender = topic === run.deletedTopic && run.doomedProducer ? run.doomedProducer : run.producer;
  const [meta] = await sender.send({
    topic,
    messages: batch.map((b) => ({ key: `r-${b.id}`, value: b.poison ? `not json ${b.id}` : JSON.stringify({ amount: b.id }), partition })),
  });
  const base = Number(meta?.baseOffset);
  // kafkajs drops messages for a partition its metadata does not know yet, without an error.
  if (meta?.partition !== partition || !Number.isSafeInteger(base))
    throw new Error(`chaos harness: produce to ${topic}/${partition} was not acknowledged`);
  batch.forEach((b, i) => run.produced.push({ topic, partition, offset: base + i, ...b } satisfies Produced));
}

/** Sets the run up and produces its first records (`perPartition` to every partition of every topic). */
export async function setUpRun(env: ChaosEnv, scenario: ScenarioName, hooks: RoundScenario, seed: number, opts: DriverOpts): Promise<Run> {
  const t0 = opts.startedAt ?? Date.now();
  const rng = prng(seed);
  const knobs: Knobs = { ...BASE, config: { ...BASE.config }, ...hooks.knobs?.(BASE, rng) };
  const tally = newTally();
  const faulty =
    knobs.faultFraction > 0 ? faultyDynamo(process.env.DYNAMODB_ENDPOINT as string, rng, knobs.faultFraction, tally.faults) : undefined;
  // The system's DynamoDB client: faulty, through the fault proxy (network scenarios), or the clean one.
  const systemDynamo = faulty ?? opts.network?.dynamoClient ?? env.ddb;
  const id = toolResourceName('chaos', scenario);
  const sinkTable = await createScenarioTable(env, 'sink');
  const auditTable = await createScenarioTable(env, 'audit');
  const nextId = { v: 1 };
  const run: Run = {
    env,
    scenario,
    seed,
    rng,
    t0,
    opts,
    knobs,
    id,
    topic1: `${id}-t1`,
    topics: [`${id}-t1`],
    streams: [],
    ledger: createDynamoLedger({ client: systemDynamo, tableName: env.ledgerTable }),
    cleanLedger: createDynamoLedger({ client: env.ddb, tableName: env.ledgerTable }),
    faulty,
    sinkTable,
    auditTable,
    audit: createAuditLog({ tableName: auditTable, client: systemDynamo }),
    produced: [],
    problems: [],
    injected: 'nothing',
    tally,
    eventDone: !hooks.hasEvent,
    producer: env.producer,
    produce: (topic, partition, n) => produce(run, topic, partition, n, nextId),
  };
  await createScenarioTopics(env, [{ topic: run.topic1, numPartitions: knobs.partitions }]);
  run.streams = streamsOf(run);
  await hooks.prepare?.(run);
  for (const t of run.topics) for (let p = 0; p < knobs.partitions; p++) await run.produce(t, p, knobs.perPartition);
  return run;
}
