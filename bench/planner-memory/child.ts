/**
 * The planner as Lambda runs it, for `bench:planner-memory`: this file is bundled with esbuild like
 * the deployed function and run on plain Node. It invokes the deployed planner handler once on its
 * schedule (`{"loop": true}`), its remaining time from PLANNER_RUN_MS, with the stream of
 * STREAMS_CONFIG; the ranges it dispatches go out as JSON lines on file descriptor 3 (the parent
 * runs the processors, as Lambda would elsewhere). Meanwhile it samples its own memory every 50 ms;
 * at the end it writes `RESULT <json>` on file descriptor 3: peak resident set and heap, CPU time,
 * ticks, and each tick's CPU time (from its planner lease to the next tick's) with the ranges it dispatched.
 */
import { createWriteStream } from 'node:fs';
import { createPlannerHandler } from '../../functions/planner';
import { awsRuntime } from '../../lib/runtime/aws';
import { lambdaContext } from '../../lib/runtime/scheduled-invocations';
import type { Dispatcher } from '../../lib/ports/dispatcher';
import { invocationPayload, invocationsOf } from '../../lib/ports/dispatcher';
import { sampleMemory } from '../memory';

const out = createWriteStream('', { fd: 3 });

/** Each tick: the process's CPU time (ms) when it took its planner lease, and the ranges it dispatched. */
const ticks: Array<{ cpuAtMs: number; ranges: number }> = [];
const cpuNowMs = (): number => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};

const dispatcher: Dispatcher = {
  async dispatch(ranges, opts) {
    const tick = ticks.at(-1);
    if (tick) tick.ranges += ranges.length;
    for (const inv of invocationsOf(ranges.length, opts)) out.write(`${JSON.stringify(invocationPayload(inv.map((i) => ranges[i]!)))}\n`);
    return ranges.map(() => ({ ok: true as const }));
  },
};

/** The resident set once the bundle is loaded, before the first invocation (Lambda's init). */
const loadedRssMb = Math.round(process.memoryUsage().rss / (1024 * 1024));

async function main(): Promise<void> {
  const memory = sampleMemory(50);
  const cpu0 = process.cpuUsage();
  const t0 = Date.now();
  // The runtime the handler would make, its ledger watched for each tick's planner lease.
  const rt = awsRuntime(process.env);
  const ledger = rt.ledger;
  Object.assign(rt, {
    ledger: {
      ...ledger,
      acquirePlannerLease(input: Parameters<typeof ledger.acquirePlannerLease>[0]) {
        ticks.push({ cpuAtMs: cpuNowMs(), ranges: 0 });
        return ledger.acquirePlannerLease(input);
      },
    },
  });
  const planner = createPlannerHandler({ dispatcher, runtime: () => rt });
  const result = (await planner({ loop: true }, lambdaContext('memory-bench', Number(process.env.PLANNER_RUN_MS)))) as unknown;
  const peaks = memory.stop();
  const cpu = process.cpuUsage(cpu0);
  const end = cpuNowMs();
  const perTick = ticks.map((t, i) => ({ cpuMs: Math.round((ticks[i + 1]?.cpuAtMs ?? end) - t.cpuAtMs), ranges: t.ranges }));
  out.end(
    `RESULT ${JSON.stringify({
      loadedRssMb,
      ...peaks,
      cpuMs: Math.round((cpu.user + cpu.system) / 1000),
      wallMs: Date.now() - t0,
      ticks: perTick,
      loop: JSON.stringify(result).slice(0, 300),
    })}\n`,
  );
}

main().then(
  () => setTimeout(() => process.exit(0), 100),
  (err: unknown) => {
    process.stderr.write(`planner failed: ${String(err)}\n`);
    process.exit(1);
  },
);
