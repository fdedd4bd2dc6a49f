/**
 * The checks every chaos run ends with: the exactly-once sink compared record by record with what
 * was produced, the at-least-once audit log for losses, the ledger invariants over both streams,
 * then the scenario's own checks (among them that its fault fired).
 */
import { scanItems, scanTotals } from '../support/scan';
import type { ScenarioResult } from './harness';
import { checkInvariants, type LedgerSnapshot } from './invariants';
import type { Figures, Produced, RoundScenario, Run } from './scenario';
import { readLedgerSnapshot } from './snapshot.dynamodb';

const partOf = (snap: LedgerSnapshot, r: Produced) => snap.partitions.find((p) => p.topic === r.topic && p.partition === r.partition);
const lostIn = (snap: LedgerSnapshot, r: Produced) =>
  snap.dataLoss.some((l) => l.topic === r.topic && l.partition === r.partition && r.offset >= l.from && r.offset < l.until);

/** Every sink entry is a produced, non-poison record, applied with its own amount; counts the extra applications. */
function checkSinkEntries(run: Run, sink: Map<string, { total: number; count: number }>): number {
  const byId = new Map(run.produced.map((r) => [`r-${r.id}`, r]));
  let duplicates = 0;
  for (const [k, v] of sink) {
    const r = byId.get(k);
    if (!r) run.problems.push(`sink holds ${k}, which was never produced`);
    else if (r.poison) run.problems.push(`sink holds poison record ${k}`);
    else if (v.total !== r.id * v.count) run.problems.push(`sink total of ${k} is ${v.total}, expected ${r.id} x ${v.count}`);
    duplicates += Math.max(0, v.count - 1);
  }
  return duplicates;
}

/** Every produced record: applied, in a recorded data-loss span, behind a stopped or retired partition, dead-lettered, or lost. */
async function figuresOf(run: Run): Promise<Figures> {
  const [eo, al] = run.streams as [Run['streams'][number], Run['streams'][number]];
  const snaps: Figures['snaps'] = [
    await readLedgerSnapshot(run.env.ddb, run.env.ledgerTable, eo.id),
    await readLedgerSnapshot(run.env.ddb, run.env.ledgerTable, al.id),
  ];
  const [snapEo, snapAl] = snaps;
  const deadLetters = await run.cleanLedger.listDeadLetters(eo.id);
  const dlKeys = new Set(deadLetters.map((d) => `${d.topic}/${d.partition}/${d.offset}`));
  const sink = await scanTotals(run.env.ddb, run.sinkTable);
  const auditKeys = new Set((await scanItems(run.env.ddb, run.auditTable)).map((i) => i.pk as string));
  const duplicates = checkSinkEntries(run, sink);
  const f: Figures = {
    expected: 0,
    applied: 0,
    duplicates,
    losses: 0,
    dataLoss: 0,
    stopped: 0,
    retired: 0,
    auditLosses: 0,
    deadLetters: deadLetters.length,
    snaps,
    partOf,
  };
  for (const r of run.produced) {
    const key = `${r.topic}/${r.partition}/${r.offset}`;
    const inSink = sink.has(`r-${r.id}`);
    if (inSink) f.applied++;
    if (lostIn(snapEo, r)) {
      f.dataLoss++;
      if (inSink) run.problems.push(`record ${key} is in a recorded data-loss span but was applied`);
    } else if (r.offset >= (partOf(snapEo, r)?.committed ?? 0)) {
      // A partition of the topic this scenario deleted, retired by the planner: records at or past its committed offset were never read.
      if (r.topic === run.deletedTopic && partOf(snapEo, r)?.status === 'retired') f.retired++;
      else f.stopped++;
    } else if (r.poison) {
      if (!dlKeys.has(key)) run.problems.push(`poison record ${key} is not dead-lettered`);
    } else {
      f.expected++;
      if (!inSink) f.losses++;
    }
    // Audit log: every record below the audit stream's committed offset and not recorded lost.
    if (!lostIn(snapAl, r) && r.offset < (partOf(snapAl, r)?.committed ?? 0) && !auditKeys.has(key)) f.auditLosses++;
  }
  if (process.env.CHAOS_DEBUG) debugDump(run, snapEo, sink);
  return f;
}

function debugDump(run: Run, snapEo: LedgerSnapshot, sink: Map<string, unknown>): void {
  const missing = run.produced.filter((r) => !r.poison && !sink.has(`r-${r.id}`));
  const ranges = snapEo.ranges.filter((r) => missing.some((m) => m.topic === r.topic && m.partition === r.partition));
  console.log(JSON.stringify({ missing: missing.slice(0, 5), ranges, parts: snapEo.partitions }, null, 1));
}

/** What the figures may not show unless the scenario allows it. */
function checkFigures(run: Run, hooks: RoundScenario, f: Figures): void {
  const allows = hooks.allows ?? {};
  if (f.stopped > 0 && !allows.stopped) run.problems.push(`${f.stopped} records not reached although the run completed`);
  for (const snap of f.snaps) {
    const registered = hooks.registered ?? run.knobs.partitions;
    if (snap.partitions.length < registered) run.problems.push(`only ${snap.partitions.length} partitions registered`);
  }
  if (f.retired && !allows.retired) run.problems.push(`${f.retired} records on retired partitions`);
  hooks.check?.(run, f);
  if (f.dataLoss && !allows.dataLoss) run.problems.push(`unexpected data loss recorded: ${f.dataLoss} records`);
  if (f.deadLetters && !allows.deadLetters) run.problems.push(`unexpected dead letters: ${f.deadLetters}`);
}

/** The figures of a scenario without an audit log, retention, dead letters, stopped or retired partitions. */
export const NO_SIDE_FIGURES = {
  auditLosses: 0,
  auditDuplicates: 0,
  dataLoss: 0,
  deadLetters: 0,
  stopped: 0,
  retired: 0,
} as const satisfies Partial<ScenarioResult>;

/** The run's result: its figures, invariant violations and problems; `ok` when there are none and nothing was lost or doubled. */
export async function checkRun(run: Run, hooks: RoundScenario): Promise<ScenarioResult> {
  const f = await figuresOf(run);
  const violations = f.snaps.flatMap((snap) => checkInvariants(snap));
  checkFigures(run, hooks, f);
  const { tally } = run;
  const ok =
    run.problems.length === 0 &&
    violations.length === 0 &&
    f.duplicates === 0 &&
    f.losses === 0 &&
    f.auditLosses === 0 &&
    f.applied === f.expected;
  return {
    scenario: run.scenario,
    seed: run.seed,
    injected: run.injected,
    produced: run.produced.length,
    expected: f.expected,
    applied: f.applied,
    duplicates: f.duplicates,
    losses: f.losses,
    auditLosses: f.auditLosses,
    auditDuplicates: run.audit.duplicates(),
    dataLoss: f.dataLoss,
    deadLetters: f.deadLetters,
    stopped: f.stopped,
    retired: f.retired,
    violations,
    problems: run.problems,
    rounds: tally.rounds,
    invocations: tally.invocations,
    processorErrors: tally.processorErrors,
    statuses: tally.statuses,
    wallMs: Date.now() - run.t0,
    ...(run.recoveryMs !== undefined && { recoveryMs: run.recoveryMs }),
    ok,
  };
}
