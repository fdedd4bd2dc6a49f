/**
 * One processor invocation in a chaos run: the real handlers, wrapped for the scenario's delay and
 * the "killed after the handler, before the commit" point; under `killProb`, a kill at a seeded
 * step, after which nothing the invocation sends is written.
 */
import { StoreError } from '../../lib/errors';
import type { HandlerRecord, RecordsHandler } from '../../lib/processor/handler-api';
import { processRange, PROCESSOR_STEPS } from '../../lib/processor/process-range';
import type { StreamConfig } from '../../lib/config/schema';
import { runningTotals } from '../../lib/handlers/running-totals';
import { killable } from './killable';
import { takeReader } from './readers';
import type { Invoke, RoundScenario, Run } from './scenario';

type Dead = { v: boolean };

/** The stream's real handler, with the scenario's delay, counting hook and kill point. */
function handlerFor(run: Run, hooks: RoundScenario, stream: StreamConfig, dead: Dead, killAfterHandler: () => boolean): RecordsHandler {
  const inner: RecordsHandler = stream.handler?.module === 'running-totals' ? runningTotals : run.audit;
  const { handlerDelayMs } = run.knobs;
  const wrap = async (records: HandlerRecord[], ctx: Parameters<RecordsHandler['handle']>[1]) => {
    if (dead.v) throw new StoreError('chaos: the process was killed');
    if (handlerDelayMs) await new Promise((r) => setTimeout(r, handlerDelayMs));
    for (const r of records) hooks.onHanded?.(stream, r.idempotencyKey);
    const out = await (inner.handle as (r: HandlerRecord[], c: typeof ctx) => unknown)(records, ctx);
    if (killAfterHandler()) {
      dead.v = true;
      throw new StoreError('chaos: processor killed after the handler, before the commit');
    }
    return out;
  };
  const fold = inner.mode === 'dynamodb-exactly-once' ? inner.fold : undefined;
  if (!fold) return { ...inner, handle: wrap } as RecordsHandler;
  // Folded batches call map per record: the same kill and counting hooks, record by record.
  const map: typeof fold.map = (r, ctx) => {
    if (dead.v) throw new StoreError('chaos: the process was killed');
    hooks.onHanded?.(stream, r.idempotencyKey);
    return fold.map(r, ctx);
  };
  return { ...inner, handle: wrap, fold: { ...fold, map } } as RecordsHandler;
}

/** The point a killed invocation dies at: a processor step, or after the handler returned; `hit` says when it is reached. */
function killPoint(run: Run, dead: Dead): { kill: boolean; hit: (step: string) => boolean } {
  const { tally, rng } = run;
  // At most 12 kills: enough of every point, and the run still completes within its budget.
  const kill = run.knobs.killProb > 0 && tally.processorKills < 12 && rng() < run.knobs.killProb;
  const points = [...PROCESSOR_STEPS, 'handler-returned'] as const;
  const killAt = kill ? points[Math.floor(rng() * points.length)] : undefined;
  const nth = 1 + Math.floor(rng() * 2);
  let seen = 0;
  const hit = (step: string): boolean => {
    if (killAt !== step || dead.v) return false;
    if (++seen < nth) return false;
    tally.processorKills++;
    tally.killedAt.push(step);
    return true;
  };
  return { kill, hit };
}

/** The run's processor invocation: counts it, its outcome and its kill. */
export function processorInvocation(run: Run, hooks: RoundScenario): Invoke {
  const { env, tally, rng } = run;
  return async (stream, range, clocks) => {
    tally.invocations++;
    const dead: Dead = { v: false };
    const { kill, hit } = killPoint(run, dead);
    const own = hooks.invocation?.(run);
    const reader = takeReader(env);
    const start = clocks?.clock() ?? Date.now();
    tally.inFlight++;
    try {
      const res = await processRange(
        {
          ledger: kill ? killable(run.ledger, dead) : run.ledger,
          readerFor: async () => reader,
          handlerFor: (s) => handlerFor(run, hooks, s, dead, () => hit('handler-returned')),
          ...(clocks && { ledger: clocks.ledger, clock: clocks.clock, storeClock: clocks.storeClock }),
          maxChunkRecords: 25,
          retryBaseMs: 5,
          // Half the invocations write folded batches in marked groups of 1-3 (kill points between them).
          fold:
            rng() < 0.5 ? { atomicMaxWrites: 0, writeGroupSize: 1 + Math.floor(rng() * 3), maxRecords: 40 + Math.floor(rng() * 80) } : {},
          afterStep: async (step) => {
            if (step === 'leased' && clocks?.whileLeased) await clocks.whileLeased();
            own?.afterStep?.(step);
            if (hit(step)) {
              dead.v = true;
              throw new Error(`chaos: processor killed at ${step}`);
            }
          },
        },
        { stream, range, deadlineAtMs: start + (run.knobs.deadlineMs ? run.knobs.deadlineMs() : 60_000) },
      );
      tally.statuses[res.status] = (tally.statuses[res.status] ?? 0) + 1;
      own?.settled?.(res.status);
    } catch {
      tally.processorErrors++;
    } finally {
      if (dead.v) tally.killedInvocations++;
      tally.inFlight--;
      env.readers.push(reader);
    }
  };
}
