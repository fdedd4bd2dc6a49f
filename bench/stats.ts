/**
 * The pure arithmetic of the end-to-end and latency benchmarks: percentiles, medians over runs,
 * produce-to-commit latencies, and the one JSON object `npm run bench:e2e` prints last (its fields
 * are fixed by the issue that asked for it: tools read it).
 */
import type { Ledger } from '../lib/ports/ledger';

/** The `p`-th percentile (0 < p <= 100) of `values` by the nearest-rank method; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (!(p > 0 && p <= 100)) throw new RangeError(`percentile must be in (0, 100], not ${p}`);
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.ceil((p / 100) * sorted.length) - 1] as number;
}

/** The median of `values` (the mean of the middle two for an even count); NaN when empty. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** The arithmetic mean of `values`; NaN when empty. */
export function mean(values: readonly number[]): number {
  return values.length ? values.reduce((s, v) => s + v, 0) / values.length : Number.NaN;
}

/** Hooks of the latency run: every record a handler is given, and every progress commit that applied. */
export type DrainObserver = {
  onRecords(records: ReadonlyArray<{ partition: number; offset: number; timestampMs: number }>): void;
  /** Offsets `[from, to)` of `partition` are committed (the ledger write returned `applied`). */
  onCommitted(partition: number, from: number, to: number): void;
};

/** Produce timestamps by partition and offset, turned into latencies as commits cover them. */
export function createLatencyObserver(now: () => number = Date.now): DrainObserver & {
  latenciesMs: number[];
  /** Produce timestamp to the handler's first sight of the record. */ handlerLatenciesMs: number[];
} {
  const produced = new Map<number, number[]>();
  const latenciesMs: number[] = [];
  const handlerLatenciesMs: number[] = [];
  return {
    latenciesMs,
    handlerLatenciesMs,
    onRecords(records) {
      const at = now();
      for (const r of records) {
        let ts = produced.get(r.partition);
        if (!ts) produced.set(r.partition, (ts = []));
        if (ts[r.offset] === undefined) handlerLatenciesMs.push(at - r.timestampMs);
        ts[r.offset] ??= r.timestampMs;
      }
    },
    onCommitted(partition, from, to) {
      const ts = produced.get(partition);
      if (!ts) return;
      const at = now();
      for (let o = from; o < to; o++) {
        const t = ts[o];
        // -1: already committed once (a later commit of the same offsets is a replay, not a new latency).
        if (t === undefined || t < 0) continue;
        latenciesMs.push(at - t);
        ts[o] = -1;
      }
    },
  };
}

/** The latency figures of a run: how many records were observed committed, p50, p99 and max. */
export function latencySummary(latenciesMs: readonly number[]): { observed: number; p50Ms: number; p99Ms: number; maxMs: number } {
  return {
    observed: latenciesMs.length,
    p50Ms: Math.round(percentile(latenciesMs, 50)),
    p99Ms: Math.round(percentile(latenciesMs, 99)),
    maxMs: Math.round(percentile(latenciesMs, 100)),
  };
}

/** What one drain of the topic measured. */
export type DrainFigures = {
  records: number;
  wallMs: number;
  /** Processor invocations started (re-dispatches included). */
  invocations: number;
  plannerTicks: number;
  /** Item writes sent to the sink table, and their write units as DynamoDB bills them. */
  sinkWrites: number;
  sinkWriteUnits: number;
  /** The sink writes' units had none been transactional: 1 per write of an item of up to 1 KB. */
  sinkIdealWriteUnits: number;
  /** Read units of the sink reads (a folded batch reads its items before it writes them). */
  sinkReadUnits: number;
  /** Item writes sent to the ledger table (planner and processors), and their write units. */
  ledgerWrites: number;
  ledgerWriteUnits: number;
  /** Sum over time of the processors in flight: the Lambda seconds this drain would bill. */
  processorSeconds: number;
  peakRssMb: number;
  /** Exactly-once drains: the sink equals the produced totals and counts account by account. */
  exact?: boolean;
};

/**
 * One run: the two drains and ConsumerPerformance's figures on the same topic: whole-run
 * (`nMsg.sec`, group join included) and fetch-only (`fetch.nMsg.sec`, the join left out).
 */
export type E2eRun = { consumerPerfRps: number; consumerPerfFetchRps: number; exactlyOnce: DrainFigures; atLeastOnce: DrainFigures };

/** The last line of `npm run bench:e2e`. */
export type E2eResult = {
  records: number;
  consumerPerfRps: number;
  consumerPerfFetchRps: number;
  exactlyOnce: {
    rps: number;
    ratio: number;
    wallMs: number;
    invocations: number;
    sinkWrites: number;
    writeUnitsPer1000: number;
    /** Sink write units per sink item written, and the same with no write transactional (1 for items of up to 1 KB). */
    writeUnitsPerItem: number;
    idealWriteUnitsPerItem: number;
    idealWriteUnitsPer1000: number;
    /** Sink read units per 1,000 records (half a unit per item read, eventually consistent). */
    readUnitsPer1000: number;
    exact: boolean;
  };
  /** `fetchRatio`: rps / consumerPerfFetchRps of the same run. */
  atLeastOnce: { rps: number; ratio: number; fetchRatio: number; wallMs: number; invocations: number };
  peakRssMb: number;
};

const round = (x: number, digits: number): number => Math.round(x * 10 ** digits) / 10 ** digits;
const rpsOf = (d: DrainFigures): number => d.records / (d.wallMs / 1000);
/** Units per write; 0 when nothing was written (an at-least-once drain). */
const perWrite = (units: number, writes: number): number => (writes > 0 ? units / writes : 0);

/**
 * The result over `runs` (each a median over the runs; `ratio` is the median of each run's own
 * rps / consumerPerfRps; `exact` holds only if every run was exact; peak RSS is the highest seen).
 */
export function e2eResult(records: number, runs: readonly E2eRun[]): E2eResult {
  if (runs.length === 0) throw new RangeError('no runs to summarise');
  const m = (f: (r: E2eRun) => number): number => median(runs.map(f));
  return {
    records,
    consumerPerfRps: Math.round(m((r) => r.consumerPerfRps)),
    consumerPerfFetchRps: Math.round(m((r) => r.consumerPerfFetchRps)),
    exactlyOnce: {
      rps: Math.round(m((r) => rpsOf(r.exactlyOnce))),
      ratio: round(
        m((r) => rpsOf(r.exactlyOnce) / r.consumerPerfRps),
        3,
      ),
      wallMs: Math.round(m((r) => r.exactlyOnce.wallMs)),
      invocations: Math.round(m((r) => r.exactlyOnce.invocations)),
      sinkWrites: Math.round(m((r) => r.exactlyOnce.sinkWrites)),
      writeUnitsPer1000: round(
        m((r) => (r.exactlyOnce.sinkWriteUnits * 1000) / r.exactlyOnce.records),
        1,
      ),
      writeUnitsPerItem: round(
        m((r) => perWrite(r.exactlyOnce.sinkWriteUnits, r.exactlyOnce.sinkWrites)),
        3,
      ),
      idealWriteUnitsPerItem: round(
        m((r) => perWrite(r.exactlyOnce.sinkIdealWriteUnits, r.exactlyOnce.sinkWrites)),
        3,
      ),
      idealWriteUnitsPer1000: round(
        m((r) => (r.exactlyOnce.sinkIdealWriteUnits * 1000) / r.exactlyOnce.records),
        1,
      ),
      readUnitsPer1000: round(
        m((r) => (r.exactlyOnce.sinkReadUnits * 1000) / r.exactlyOnce.records),
        1,
      ),
      exact: runs.every((r) => r.exactlyOnce.exact === true),
    },
    atLeastOnce: {
      rps: Math.round(m((r) => rpsOf(r.atLeastOnce))),
      ratio: round(
        m((r) => rpsOf(r.atLeastOnce) / r.consumerPerfRps),
        3,
      ),
      fetchRatio: round(
        m((r) => rpsOf(r.atLeastOnce) / r.consumerPerfFetchRps),
        3,
      ),
      wallMs: Math.round(m((r) => r.atLeastOnce.wallMs)),
      invocations: Math.round(m((r) => r.atLeastOnce.invocations)),
    },
    peakRssMb: Math.max(...runs.flatMap((r) => [r.exactlyOnce.peakRssMb, r.atLeastOnce.peakRssMb])),
  };
}

/**
 * A records/s column of ConsumerPerformance's CSV output: `nMsg.sec` (whole run, group join
 * included, the default) or `fetch.nMsg.sec` (the fetch time only).
 */
export function consumerPerfRps(stdout: string, column: 'nMsg.sec' | 'fetch.nMsg.sec' = 'nMsg.sec'): number {
  const lines = stdout.trim().split('\n');
  const header = lines.findIndex((l) => l.includes('nMsg.sec'));
  const names = (lines[header] ?? '').split(',').map((c) => c.trim());
  const values = (lines[header + 1] ?? '').split(',').map((c) => c.trim());
  const at = names.indexOf(column);
  const rps = at < 0 ? Number.NaN : Number(values[at]);
  if (header < 0 || !Number.isFinite(rps)) throw new Error(`no ${column} in ConsumerPerformance's output: ${stdout.slice(-500)}`);
  return rps;
}

/** Per-account `[total, count]` that differ between what was produced and what the sink holds. */
export function totalsMismatches(
  expected: Record<string, readonly [number, number]>,
  sink: Record<string, { total: number; count: number }>,
): string[] {
  const out: string[] = [];
  for (const k of new Set([...Object.keys(expected), ...Object.keys(sink)])) {
    const e = expected[k];
    const s = sink[k];
    if (e?.[0] !== s?.total || e?.[1] !== s?.count)
      out.push(`${k}: produced ${e ? `${e[0]}/${e[1]}` : 'nothing'}, sink ${s ? `${s.total}/${s.count}` : 'nothing'}`);
  }
  return out;
}

/** The largest gap between consecutive times (in any order); 0 with fewer than two. */
export function maxGapMs(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let gap = 0;
  for (let i = 1; i < sorted.length; i++) gap = Math.max(gap, (sorted[i] as number) - (sorted[i - 1] as number));
  return gap;
}

/** A look at the ledger from outside: when, and each partition's committed offset then. */
export type CommittedLook = { atMs: number; committed: ReadonlyMap<number, number> };

/**
 * The largest gap between a partition's commits while it had records left to commit (below its end),
 * from its first commit on, as successive looks saw them (so to within the looks' interval). Under
 * a steady load every hand-over's gap is one, and so is any other stall: where nothing inside the
 * functions reports hand-overs, it bounds their gaps from above.
 */
export function maxCommitGapMs(looks: readonly CommittedLook[], ends: readonly number[]): number {
  let max = 0;
  ends.forEach((end, partition) => {
    let last: { offset: number; atMs: number; moved: boolean } | undefined;
    for (const look of looks) {
      const offset = look.committed.get(partition);
      if (offset === undefined || offset === last?.offset) continue;
      if (last?.moved && last.offset < end) max = Math.max(max, look.atMs - last.atMs);
      last = { offset, atMs: look.atMs, moved: last !== undefined };
    }
  });
  return max;
}

/** What one handler's phase of a `bench:latency -- --deployed` run measured. */
export type DeployedPhase = {
  records: number;
  observed: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Scheduled invocations that took the loop over from an earlier one and ticked (a hand-over each). */
  handovers: number;
  /** Ticks of each scheduled invocation, in schedule order. */
  ticksPerInvocation: number[];
  /** The largest gap between the starts of consecutive ticks over the whole schedule, hand-overs included (this machine's clock). */
  maxTickGapMs: number;
  /** The largest gap from one invocation's last tick to the next one's first. */
  maxHandoverGapMs: number;
  /** Exactly-once phases: the sink equals what was produced. */
  exact?: boolean;
  /** Ledger write units (planner and processors) per range completed, as DynamoDB bills them. */
  ledgerWriteUnitsPerRange?: number;
  /** Processor invocations per planner tick. */
  processorInvocationsPerTick?: number;
  /** Bytes the processor handler logged per invocation (its metrics and log lines; Lambda's own lines are not printed here). */
  logBytesPerInvocation?: number;
  /** Ticked by the tick chain: each tick's planner invocation, as Lambda bills it (ms). */
  plannerMsPerTick?: number;
  /** Continuous mode: the fewest segment hand-overs of any partition. */
  segmentHandoversPerPartition?: number;
  /** Continuous mode: the largest gap across a hand-over, predecessor's last commit to successor's first. */
  maxSegmentGapMs?: number;
  /** Continuous mode: ledger write units a second of load (planner and segments), as DynamoDB bills them. */
  ledgerWriteUnitsPerSec?: number;
  /** Continuous mode: processor invocations running on average (billed seconds per second: the resident segments). */
  processorSecondsPerSec?: number;
};

/** One run: a phase per handler. */
export type DeployedRun = { noop: DeployedPhase; exactlyOnce: DeployedPhase };

/** The last line of `npm run bench:latency -- --deployed`. */
export type DeployedResult = {
  triggerIntervalMs: number;
  schedulePeriodMs: number;
  /** Continuous mode: its segment length and commit interval. */
  continuous?: { segmentMs: number; commitIntervalMs: number };
  handovers: number;
  /** The largest gap between ticks across hand-overs: one invocation's last tick to the next one's first. */
  maxTickGapMs: number;
  noop: PhaseSummary;
  exactlyOnce: PhaseSummary & { exact: boolean };
};

/** A phase's figures over the runs (medians). */
export type PhaseSummary = {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  ledgerWriteUnitsPerRange?: number;
  processorInvocationsPerTick?: number;
  logBytesPerInvocation?: number;
  plannerMsPerTick?: number;
  segmentHandoversPerPartition?: number;
  maxSegmentGapMs?: number;
  ledgerWriteUnitsPerSec?: number;
  processorSecondsPerSec?: number;
};

/**
 * The result over `runs`, each figure a median over the runs: of a run's fewer hand-overs and larger
 * hand-over gap of its two phases, and of each phase's percentiles; `exact` holds only if every run was.
 */
export function deployedResult(
  setting: { triggerIntervalMs: number; schedulePeriodMs: number; continuous?: { segmentMs: number; commitIntervalMs: number } },
  runs: readonly DeployedRun[],
): DeployedResult {
  if (runs.length === 0) throw new RangeError('no runs to summarise');
  const m = (f: (r: DeployedRun) => number): number => Math.round(median(runs.map(f)));
  /** The median of a figure every run has, to two decimals; left out when a run lacks it. */
  const m2 = (f: (r: DeployedRun) => number | undefined): number | undefined => {
    const xs = runs.map(f);
    return xs.every((x) => x !== undefined) ? Math.round(median(xs as number[]) * 100) / 100 : undefined;
  };
  const phase = (p: (r: DeployedRun) => DeployedPhase): PhaseSummary => {
    const wu = m2((r) => p(r).ledgerWriteUnitsPerRange);
    const inv = m2((r) => p(r).processorInvocationsPerTick);
    const logs = m2((r) => p(r).logBytesPerInvocation);
    const tickMs = m2((r) => p(r).plannerMsPerTick);
    const continuous = {
      segmentHandoversPerPartition: m2((r) => p(r).segmentHandoversPerPartition),
      maxSegmentGapMs: m2((r) => p(r).maxSegmentGapMs),
      ledgerWriteUnitsPerSec: m2((r) => p(r).ledgerWriteUnitsPerSec),
      processorSecondsPerSec: m2((r) => p(r).processorSecondsPerSec),
    };
    return {
      p50Ms: m((r) => p(r).p50Ms),
      p99Ms: m((r) => p(r).p99Ms),
      maxMs: m((r) => p(r).maxMs),
      ...(wu !== undefined ? { ledgerWriteUnitsPerRange: wu } : {}),
      ...(inv !== undefined ? { processorInvocationsPerTick: inv } : {}),
      ...(logs !== undefined ? { logBytesPerInvocation: Math.round(logs) } : {}),
      ...(tickMs !== undefined ? { plannerMsPerTick: Math.round(tickMs) } : {}),
      ...Object.fromEntries(Object.entries(continuous).filter(([, v]) => v !== undefined)),
    };
  };
  return {
    triggerIntervalMs: setting.triggerIntervalMs,
    schedulePeriodMs: setting.schedulePeriodMs,
    ...(setting.continuous && { continuous: setting.continuous }),
    handovers: m((r) => Math.min(r.noop.handovers, r.exactlyOnce.handovers)),
    maxTickGapMs: m((r) => Math.max(r.noop.maxHandoverGapMs, r.exactlyOnce.maxHandoverGapMs)),
    noop: phase((r) => r.noop),
    exactlyOnce: { ...phase((r) => r.exactlyOnce), exact: runs.every((r) => r.exactlyOnce.exact === true) },
  };
}

/**
 * Continuous segments' hand-overs, per partition: how many, and the largest gap a partition's
 * records saw across one, from the predecessor's last commit that moved progress to the successor's
 * first (records flow all along under the bench's load, so that is what a record waiting at the
 * hand-over waits beyond the usual).
 */
export function createSegmentWatch(now: () => number = Date.now) {
  const lastCommitAtMs = new Map<number, number>();
  const handedOverAt = new Map<number, number>();
  const handovers = new Map<number, number>();
  const gapsMs: number[] = [];
  const committed = (partition: number, moved: boolean) => {
    if (!moved) return;
    const at = now();
    const before = handedOverAt.get(partition);
    if (before !== undefined) {
      gapsMs.push(at - before);
      handedOverAt.delete(partition);
    }
    lastCommitAtMs.set(partition, at);
  };
  return {
    gapsMs,
    handovers,
    /** The ledger with its applied commits and hand-overs watched. */
    ledger<L extends Ledger>(ledger: L): L {
      return {
        ...ledger,
        async commitChunk(input) {
          const out = await ledger.commitChunk(input);
          if (out === 'applied') committed(input.range.partition, input.to > input.expectProgress);
          return out;
        },
        async commitChunks(inputs) {
          const out = await ledger.commitChunks(inputs);
          out.forEach((o, i) => {
            const c = inputs[i];
            if (o === 'applied' && c) committed(c.range.partition, c.to > c.expectProgress);
          });
          return out;
        },
        async releaseRange(input) {
          const out = await ledger.releaseRange(input);
          const p = input.range.partition;
          if (out === 'applied' && input.handover) {
            handovers.set(p, (handovers.get(p) ?? 0) + 1);
            handedOverAt.set(p, lastCommitAtMs.get(p) ?? now());
          }
          return out;
        },
      };
    },
    /** The fewest hand-overs of any partition (of `partitions`), and the largest gap. */
    summary(partitions: number): { handoversPerPartition: number; maxSegmentGapMs: number } {
      const counts = Array.from({ length: partitions }, (_, p) => handovers.get(p) ?? 0);
      return { handoversPerPartition: Math.min(...counts), maxSegmentGapMs: Math.max(0, ...gapsMs) };
    },
  };
}
