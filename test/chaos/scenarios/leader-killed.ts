/**
 * leader-killed: on a private 3-broker cluster (private-kafka.ts), the leader of some partitions is
 * killed between two planner rounds, so the following planner runs meet the dead leader before the
 * controller fences it: they must plan the live leaders' partitions, report the dead leader's
 * unavailable, and plan those again after the re-election. In continuous mode (its variant) the
 * open segment ranges are planned once: there it is the committed offsets that must move, the live
 * leaders' partitions' while the dead leader's wait, those after the re-election; records are
 * produced again after the kill, so that there is something to commit.
 */
import { emptyReport, type StreamPlanReport } from '../../../lib/planner/run';
import type { RoundScenario, Run } from '../scenario';

/** leader-killed: what the planner runs after the kill saw, for the report and the checks. */
type FailoverLog = {
  killedAtMs?: number;
  victim?: number;
  /** Partitions the killed broker led. */
  dead: number[];
  /** Planner runs: when each started (`atMs`) and how long it took. */
  runs: Array<{
    atMs: number;
    durationMs: number;
    status: string;
    planned: number[];
    unavailable: number[];
    codes: string[];
    /** Partitions whose committed offset moved since the run before (continuous mode's progress). */
    advanced: number[];
  }>;
  /** Each stream's partitions' committed offsets at its last run. */
  committed: Map<string, number>;
  continuous: boolean;
};

/** One planner run as leader-killed records it. */
function failoverRun(rep: StreamPlanReport, committed: Map<string, number>): FailoverLog['runs'][number] {
  const unavailable = rep.partitions.filter((p) => p.action === 'no-offsets');
  const advanced = rep.partitions.filter((p) => {
    const k = `${rep.stream}/${p.partition}`;
    const moved = committed.has(k) && p.committed > (committed.get(k) ?? 0);
    committed.set(k, Math.max(p.committed, committed.get(k) ?? 0));
    return moved;
  });
  return {
    advanced: advanced.map((p) => p.partition),
    atMs: Date.now() - rep.durationMs,
    durationMs: rep.durationMs,
    status: rep.status,
    planned: rep.partitions.filter((p) => p.planned.length > 0).map((p) => p.partition),
    unavailable: unavailable.map((p) => p.partition),
    codes: unavailable.map((p) => p.unavailable ?? 'unknown'),
  };
}

/** The leader-killed figures and the problems they show (none when only the dead leader's partitions stalled). */
function failoverFigures(log: FailoverLog, partitions: number, startMs: number): { injected: string; problems: string[] } {
  const killedAt = log.killedAtMs;
  if (killedAt === undefined) return { injected: 'no leader was killed', problems: ['no leader was killed'] };
  const after = log.runs.filter((r) => r.atMs >= killedAt);
  const stalled = after.filter((r) => r.unavailable.length > 0);
  const failed = after.filter((r) => r.status === 'failed');
  // What a run shows of a partition being served: a new range, or in continuous mode its committed offset moving.
  const served = (r: FailoverLog['runs'][number]) => (log.continuous ? r.advanced : r.planned);
  const live = (r: FailoverLog['runs'][number]) => served(r).filter((p) => !log.dead.includes(p));
  const back = after.find((r) => served(r).some((p) => log.dead.includes(p)));
  const first = stalled[0];
  const problems: string[] = [];
  if (failed.length)
    problems.push(`${failed.length} planner runs failed after the kill (${Math.max(...failed.map((r) => r.durationMs))} ms at most)`);
  if (!first) problems.push("no planner run saw the dead leader's partitions unavailable (re-election before the next run?)");
  else if (!log.continuous && !stalled.some((r) => live(r).length > 0))
    problems.push("no run planned the live leaders' partitions while the dead leader's were unavailable");
  else if (log.continuous && !after.some((r) => live(r).length > 0 && (!back || r.atMs <= back.atMs)))
    problems.push("the live leaders' partitions committed nothing before the dead leader's were back");
  if (stalled.some((r) => r.unavailable.some((p) => !log.dead.includes(p))))
    problems.push('a partition of a live leader was reported unavailable');
  if (!back) problems.push(`the dead leader's partitions were never ${log.continuous ? 'committed' : 'planned'} again`);
  const codes = [...new Set(stalled.flatMap((r) => r.codes))].join(', ');
  const injected =
    `private 3-broker cluster (replication factor 3, min.insync.replicas 2, started in ${startMs} ms); after round 1 the leader (broker ${log.victim}) ` +
    `of ${log.dead.length} of ${partitions} partitions was killed (SIGKILL): ${stalled.length} planner runs (both streams) during the stall took ` +
    `${stalled.length ? Math.max(...stalled.map((r) => r.durationMs)) : 0} ms at most, ${log.continuous ? 'saw' : 'planned'} ${stalled.reduce((n, r) => n + live(r).length, 0)} ` +
    `${log.continuous ? 'commits' : 'ranges'} of the live leaders' partitions and reported the dead leader's unavailable ` +
    `(${codes || 'none'}); those were ${log.continuous ? 'committed' : 'planned'} again ` +
    `${back ? back.atMs + back.durationMs - killedAt : '-'} ms after the kill (re-election); ${failed.length} planner runs failed`;
  return { injected, problems };
}

/** Between rounds: no processor is reading, so the next planner runs meet the dead leader first. */
async function killLeader(run: Run, failover: FailoverLog): Promise<void> {
  const cluster = run.opts.cluster;
  if (!cluster) return;
  run.eventDone = true;
  const before = await run.env.admin.fetchTopicMetadata({ topics: [run.topic1] });
  failover.victim = await cluster.killLeaderOf(run.topic1, 0);
  failover.killedAtMs = Date.now();
  failover.dead = (before.topics[0]?.partitions ?? [])
    .filter((p) => p.leader === failover.victim)
    .map((p) => p.partitionId)
    .sort();
}

export const leaderKilled = (): RoundScenario => {
  const failover: FailoverLog = { dead: [], runs: [], committed: new Map(), continuous: false };
  let pending: Promise<unknown> | undefined;
  return {
    // Six partitions spread their leaders over the three brokers; small ranges leave lag behind the kill.
    knobs: (base) => ({ partitions: 6, perPartition: 40, config: { ...base.config, maxOffsetsPerTrigger: 60 } }),
    hasEvent: true,
    // The log ends cannot be read from a dead leader until re-election: not complete yet.
    tolerateUnreadableEnds: true,
    async beforePlan(run) {
      failover.continuous = run.knobs.config.continuous !== undefined;
      if (run.eventDone || run.tally.rounds < 1) return;
      await killLeader(run, failover);
    },
    // Continuous: round 1's segments read everything there was; more records to commit once the
    // planner runs of the kill's round have met the dead leader, produced while the segments run (the
    // dead leader's partitions take theirs once re-elected).
    async afterPlan(run) {
      if (!failover.continuous || failover.killedAtMs === undefined || pending) return;
      pending = Promise.all(Array.from({ length: run.knobs.partitions }, (_, p) => run.produce(run.topic1, p, 10)));
    },
    async afterRound() {
      await pending;
    },
    onPlanned(_run, stream, rep, startedAtMs) {
      if (rep) failover.runs.push(failoverRun(rep, failover.committed));
      else {
        const failedRun = { ...failoverRun(emptyReport(stream.id, false), failover.committed), status: 'failed' };
        failover.runs.push({ ...failedRun, atMs: startedAtMs, durationMs: Date.now() - startedAtMs });
      }
    },
    finish(run) {
      const figures = failoverFigures(failover, run.knobs.partitions, run.opts.cluster?.startMs ?? 0);
      run.injected = `${figures.injected}; ${run.tally.processorErrors} processor invocations failed and were re-dispatched`;
      run.problems.push(...figures.problems);
    },
  };
};
