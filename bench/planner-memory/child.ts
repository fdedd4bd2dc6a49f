/**
 * The planner as Lambda runs it, for `bench:planner-memory`: this file is bundled with esbuild like
 * the deployed function and run on plain Node. It invokes the deployed planner handler once on its
 * schedule (`{"loop": true}`), its remaining time from PLANNER_RUN_MS, with the stream of
 * STREAMS_CONFIG; the ranges it dispatches go out as JSON lines on file descriptor 3 (the parent
 * runs the processors, as Lambda would elsewhere). Meanwhile it samples its own memory every 50 ms;
 * at the end it writes `RESULT <json>` on file descriptor 3: peak resident set and heap, CPU time,
 * ticks, and the CPU time between consecutive dispatches (a tick's, warm, when every tick dispatches).
 */
import { createWriteStream } from 'node:fs';
import { createPlannerHandler } from '../../functions/planner';
import { lambdaContext } from '../../lib/runtime/scheduled-invocations';
import type { Dispatcher } from '../../lib/ports/dispatcher';
import { invocationPayload, invocationsOf } from '../../lib/ports/dispatcher';

const out = createWriteStream('', { fd: 3 });
const MB = 1024 * 1024;

/** The process's CPU time (ms) at each dispatch: a tick dispatches once, so their differences are the ticks' CPU. */
const cpuAtDispatchMs: number[] = [];
const cpuNowMs = (): number => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};

const dispatcher: Dispatcher = {
  async dispatch(ranges, opts) {
    cpuAtDispatchMs.push(cpuNowMs());
    for (const inv of invocationsOf(ranges.length, opts)) out.write(`${JSON.stringify(invocationPayload(inv.map((i) => ranges[i]!)))}\n`);
    return ranges.map(() => ({ ok: true as const }));
  },
};

/** The resident set once the bundle is loaded, before the first invocation (Lambda's init). */
const loadedRssMb = Math.round(process.memoryUsage().rss / (1024 * 1024));

async function main(): Promise<void> {
  let rss = 0;
  let heap = 0;
  const sample = () => {
    const m = process.memoryUsage();
    rss = Math.max(rss, m.rss);
    heap = Math.max(heap, m.heapUsed);
  };
  const timer = setInterval(sample, 50);
  const cpu0 = process.cpuUsage();
  const t0 = Date.now();
  const planner = createPlannerHandler({ dispatcher });
  const result = (await planner({ loop: true }, lambdaContext('memory-bench', Number(process.env.PLANNER_RUN_MS)))) as unknown;
  sample();
  clearInterval(timer);
  const cpu = process.cpuUsage(cpu0);
  const ticks = JSON.stringify(result).match(/"ticks":(\d+)/)?.[1];
  const tickCpuMs = cpuAtDispatchMs.slice(1).map((c, i) => Math.round(c - (cpuAtDispatchMs[i] as number)));
  out.end(
    `RESULT ${JSON.stringify({
      loadedRssMb,
      peakRssMb: Math.round(rss / MB),
      peakHeapUsedMb: Math.round(heap / MB),
      cpuMs: Math.round((cpu.user + cpu.system) / 1000),
      wallMs: Date.now() - t0,
      ticks: ticks === undefined ? undefined : Number(ticks),
      tickCpuMs,
      loop: JSON.stringify(result).slice(0, 600),
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
