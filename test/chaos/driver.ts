/**
 * The chaos driver every round-based scenario runs on: sets the run up, then planner rounds (the
 * scenario's one-shot planner runs, and its planner loops if it has any) and processor invocations
 * (several at once, in seeded order) until every partition reached its log end or stopped on
 * purpose, within the budget; then the scenario's figures and the checks (run-checks.ts).
 */
import { randomUUID } from 'node:crypto';
import type { StreamConfig } from '../../lib/config/schema';
import { mapWithConcurrency } from '../../lib/concurrency';
import { planStream } from '../../lib/planner/run';
import type { ChaosEnv } from './env';
import type { ScenarioName, ScenarioResult } from './harness';
import { processorInvocation } from './invocation';
import { startLoops, type LoopDriver } from './loops';
import { checkRun } from './run-checks';
import { setUpRun } from './run-setup';
import type { DriverOpts, Invoke, Queued, RoundScenario, Run } from './scenario';

/** A scenario's time to apply every record unless it is given another (test/chaos/suite.ts). */
export const DEFAULT_BUDGET_MS = 40_000;

/** One one-shot planner run of a stream; its dispatched ranges are queued (twice under duplicateInvoke). */
async function plan(run: Run, hooks: RoundScenario, stream: StreamConfig, queue: Queued[]): Promise<void> {
  const startedAtMs = Date.now();
  const dispatcher = {
    async dispatch(ranges: Queued['range'][]) {
      for (const range of ranges) {
        run.tally.dispatched++;
        queue.push({ stream, range });
        if (run.knobs.duplicateInvoke) queue.push({ stream, range });
      }
      return ranges.map(() => ({ ok: true as const }));
    },
  };
  const metadataFor = (s: StreamConfig) => run.env.metadata.forStream(s);
  const deps = { ledger: run.ledger, metadataFor, dispatcher, plannerLeaseMs: 1500, ownerToken: randomUUID() };
  const nowMs = hooks.planNowMs ? await hooks.planNowMs() : Date.now();
  await planStream(deps, stream, { dryRun: false, nowMs }).then(
    (rep) => {
      if (rep.status === 'failed') run.tally.plannerFailures++;
      hooks.onPlanned?.(run, stream, rep, startedAtMs);
    },
    () => {
      run.tally.plannerFailures++;
      hooks.onPlanned?.(run, stream, undefined, startedAtMs);
    },
  );
}

/** Every partition caught up with the log end, or stopped on purpose (failed / range parked). */
async function complete(run: Run): Promise<boolean> {
  const ends = new Map<string, number>();
  for (const t of run.topics) for (const o of await run.env.admin.fetchTopicOffsets(t)) ends.set(`${t}/${o.partition}`, Number(o.high));
  for (const s of run.streams) {
    const parts = await run.cleanLedger.readPartitions(s.id);
    if (parts.length < ends.size) return false;
    const open = await run.cleanLedger.readOpenRanges(s.id);
    for (const p of parts) {
      if (p.status !== 'active') continue;
      if (!ends.has(`${p.topic}/${p.partition}`)) return false;
      const parked = open.some(
        (r) => r.topic === p.topic && r.partition === p.partition && r.status === 'parked' && r.from === p.committed,
      );
      if (!parked && p.committed < (ends.get(`${p.topic}/${p.partition}`) ?? 0)) return false;
    }
  }
  return true;
}

/** One round: the scenario's event, the planner runs, the processors of what they dispatched. True once the run is complete. */
async function round(
  run: Run,
  hooks: RoundScenario,
  invoke: Invoke,
  loops: LoopDriver | undefined,
): Promise<{ done: boolean; queued: number }> {
  const t0 = Date.now();
  await hooks.beforePlan?.(run);
  const queue: Queued[] = [];
  await Promise.all(run.streams.flatMap((s) => Array.from({ length: run.knobs.planners }, () => plan(run, hooks, s, queue))));
  await hooks.afterPlan?.(run, queue);
  const planned = Date.now();
  // Processors run in any order, several at once (Lambda async invokes).
  const order = queue
    .map((q) => ({ q, k: run.rng() }))
    .sort((a, b) => a.k - b.k)
    .map((x) => x.q);
  await mapWithConcurrency(order, 8, (q) => (hooks.process ? hooks.process(q, invoke) : invoke(q.stream, q.range)));
  await hooks.afterRound?.(run);
  const processed = Date.now();
  if (loops) run.eventDone = loops.satisfied();
  run.tally.rounds++;
  const done = await (hooks.tolerateUnreadableEnds ? complete(run).catch(() => false) : complete(run));
  const end = Date.now();
  if (end - t0 > run.tally.slowestRound.totalMs)
    run.tally.slowestRound = { totalMs: end - t0, planMs: planned - t0, processMs: processed - planned, checkMs: end - processed };
  return { done: run.eventDone && done, queued: queue.length };
}

/** Where a run that missed its budget spent it: rounds, invocations, the slowest round's phases. */
function budgetMissed(run: Run, budgetMs: number): string {
  const { rounds, invocations, processorErrors, plannerFailures, slowestRound: s } = run.tally;
  return (
    `did not complete within ${budgetMs} ms (${rounds} rounds, ${invocations} invocations, ${processorErrors} processor errors, ` +
    `${plannerFailures} planner failures; slowest round ${s.totalMs} ms: plan ${s.planMs}, process ${s.processMs}, check ${s.checkMs})`
  );
}

/** Runs a round-based scenario end to end and checks it; never throws for a failed check (see `ok`, `problems`). */
export async function runRounds(
  env: ChaosEnv,
  scenario: ScenarioName,
  hooks: RoundScenario,
  seed: number,
  opts: DriverOpts,
): Promise<ScenarioResult> {
  const run = await setUpRun(env, scenario, hooks, seed, opts);
  const invoke = processorInvocation(run, hooks);
  const budget = opts.budgetMs ?? DEFAULT_BUDGET_MS;
  // planners-2/3, planner-kill: planner loops on a schedule beside the rounds, their ranges processed as dispatched.
  const loopInput = { streams: run.streams, ledger: run.ledger, cleanLedger: run.cleanLedger, rng: run.rng, metadata: env.metadata };
  const loops: LoopDriver | undefined = startLoops(scenario, loopInput, (s, r) =>
    invoke(s, r, { ledger: run.ledger, ...(loops as LoopDriver).clocks }),
  );
  if (loops) run.eventDone = false;
  let finished = false;
  while (Date.now() - run.t0 < budget) {
    const { done, queued } = await round(run, hooks, invoke, loops);
    if (done) {
      finished = true;
      break;
    }
    await new Promise((r) => setTimeout(r, queued ? 50 : 300));
  }
  if (!finished) run.problems.push(budgetMissed(run, budget));
  const loopCheck = await loops?.stop();
  run.problems.push(...(loopCheck?.problems ?? []));
  hooks.finish?.(run, loopCheck);
  const result = await checkRun(run, hooks);
  run.faulty?.destroy();
  if (run.producer !== env.producer) await run.producer.disconnect();
  await run.doomedProducer?.disconnect();
  return result;
}
