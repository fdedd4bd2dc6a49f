/**
 * The contract between the chaos driver (driver.ts) and a scenario of it (scenarios/): the run a
 * scenario sees, the knobs it turns, and the hooks where it injects its fault and checks its effect.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Producer } from 'kafkajs';
import type { StreamConfig } from '../../lib/config/schema';
import type { createAuditLog } from '../../lib/handlers/audit-log';
import type { StreamPlanReport } from '../../lib/planner/run';
import type { ProcessorStep } from '../../lib/processor/process-range';
import type { Ledger, StoreClock } from '../../lib/ports/ledger';
import type { PartitionState } from '../../lib/ports/ledger-state';
import type { RangePayload } from '../../lib/ranges';
import type { ChaosEnv } from './env';
import type { ScenarioName } from './harness';
import type { LedgerSnapshot } from './invariants';
import type { LoopCheck } from './loops';
import type { BrokerControl, ClusterControl } from './private-kafka';
import type { NetworkControl } from './proxied';

/** One produced record: every record has a unique key `r-<id>` and amount `id`. */
export type Produced = { topic: string; partition: number; offset: number; id: number; poison: boolean };

/** A dispatched range waiting for its processor. */
export type Queued = { stream: StreamConfig; range: RangePayload };

export type DriverOpts = {
  budgetMs?: number;
  broker?: BrokerControl;
  cluster?: ClusterControl;
  /** The network scenarios: the broker and DynamoDB reached through fault proxies (proxied.ts). */
  network?: NetworkControl;
  startedAt?: number;
};

/** What a scenario may turn; everything else is the same in every scenario. */
export type Knobs = {
  partitions: number;
  perPartition: number;
  config: Record<string, unknown>;
  /** One-shot planner runs per stream every round. */
  planners: number;
  /** Every dispatched range is queued twice. */
  duplicateInvoke: boolean;
  /** The chance that a processor invocation is killed at a seeded point. */
  killProb: number;
  /** An invocation's deadline after its start (default 60 s). */
  deadlineMs?: () => number;
  handlerDelayMs: number;
  /** The fraction of ledger requests that fail before they are sent. */
  faultFraction: number;
  /** Every n-th record is not JSON. */
  poisonEvery: number;
  /** The streams subscribe by pattern (`<id>-t[0-9]+`) instead of naming the topic. */
  pattern: boolean;
};

/** What the run did, counted as it happened. */
export type Tally = {
  rounds: number;
  invocations: number;
  processorErrors: number;
  plannerFailures: number;
  statuses: Record<string, number>;
  inFlight: number;
  /** Ranges the one-shot planner runs dispatched (each queued once, or twice under duplicateInvoke). */
  dispatched: number;
  /** Processor kills that fired, the points they hit, and the invocations that ended killed. */
  processorKills: number;
  killedAt: string[];
  killedInvocations: number;
  /** Ledger requests failed on purpose, and ledger requests that met such a failure (retried or failed). */
  faults: { injected: number; met: number };
  /** The slowest round's phases (ms): what a run that misses its budget spent its time on. */
  slowestRound: { totalMs: number; planMs: number; processMs: number; checkMs: number };
};

/** One scenario run: set up by the driver, read and changed by the scenario's hooks. */
export type Run = {
  env: ChaosEnv;
  scenario: ScenarioName;
  seed: number;
  rng: () => number;
  t0: number;
  opts: DriverOpts;
  knobs: Knobs;
  id: string;
  topic1: string;
  /** The topics the run reads (the log ends of these must be reached). */
  topics: string[];
  streams: StreamConfig[];
  /** The ledger the system uses (faulty under dynamodb-faults), and one without faults for the checks. */
  ledger: Ledger;
  cleanLedger: Ledger;
  faulty?: DynamoDBClient;
  sinkTable: string;
  audit: ReturnType<typeof createAuditLog>;
  auditTable: string;
  produced: Produced[];
  problems: string[];
  injected: string;
  tally: Tally;
  /** The scenario's mid-run event happened (always true without one). */
  eventDone: boolean;
  /** Network scenarios: from the fault's end to the next commit. */
  recoveryMs?: number;
  producer: Producer;
  /** topic-deleted: the topic deleted mid-run, and its own producer until then. */
  deletedTopic?: string;
  doomedProducer?: Producer;
  produce(topic: string, partition: number, n: number): Promise<void>;
};

export type ProcessorClocks = { ledger: Ledger; clock: () => number; storeClock: StoreClock; whileLeased?: () => Promise<void> };

/** One processor invocation of a range, on the machine's clocks or on `clocks`. */
export type Invoke = (stream: StreamConfig, range: RangePayload, clocks?: ProcessorClocks) => Promise<void>;

/** Hooks on one processor invocation. */
export type InvocationHooks = { afterStep?(step: ProcessorStep): void; settled?(status: string): void };

/** The figures of the record-by-record comparison of the sink and audit log with what was produced. */
export type Figures = {
  expected: number;
  applied: number;
  duplicates: number;
  losses: number;
  dataLoss: number;
  stopped: number;
  retired: number;
  auditLosses: number;
  deadLetters: number;
  snaps: [LedgerSnapshot, LedgerSnapshot];
  partOf(snap: LedgerSnapshot, r: Produced): PartitionState | undefined;
};

/**
 * A scenario on the shared driver: its knobs, its fault (hooks around the planner rounds and the
 * processor invocations), and its checks, among them that the fault fired.
 */
export type RoundScenario = {
  /** Knobs over the base ones; `rng` is the run's PRNG, drawn in a fixed order. */
  knobs?(base: Knobs, rng: () => number): Partial<Knobs>;
  /** The scenario has a mid-run event, which must happen before the run may count as complete. */
  hasEvent?: boolean;
  /** Partitions each stream must have registered at the end (default: `knobs.partitions`). */
  registered?: number;
  /** What the figures may show without a problem (default: none of them). */
  allows?: { dataLoss?: boolean; deadLetters?: boolean; stopped?: boolean; retired?: boolean };
  /** After the topics and streams exist, before the records are produced. */
  prepare?(run: Run): Promise<void>;
  /** Before each round's planner runs. */
  beforePlan?(run: Run): Promise<void>;
  /** The time a planner run is given (default: the machine's). */
  planNowMs?(): Promise<number>;
  /** A one-shot planner run ended (`rep` undefined when it threw). */
  onPlanned?(run: Run, stream: StreamConfig, rep: StreamPlanReport | undefined, startedAtMs: number): void;
  /** After each round's planner runs, before the processors. */
  afterPlan?(run: Run, queue: Queued[]): Promise<void>;
  /** How one queued range is processed (default: one invocation). */
  process?(q: Queued, invoke: Invoke): Promise<void>;
  /** Per processor invocation. */
  invocation?(run: Run): InvocationHooks;
  /** A record handed to a stream's handler. */
  onHanded?(stream: StreamConfig, idempotencyKey: string): void;
  /** After each round's processors. */
  afterRound?(run: Run): Promise<void>;
  /** The log ends may be unreadable for a while (a dead leader): not complete then, rather than a failure. */
  tolerateUnreadableEnds?: boolean;
  /** Once the rounds ended: what was injected (`run.injected`), and whether it fired (`run.problems`). */
  finish?(run: Run, loops: LoopCheck | undefined): void;
  /** Scenario checks over the figures. */
  check?(run: Run, figures: Figures): void;
};
