/**
 * Tick queue adapter for in-process runs (benchmarks, tests): a timer per message that calls the
 * planner handler with the event an SQS event source mapping would give it. `duplicate` delivers a
 * share of the messages twice, as a queue's at-least-once delivery may.
 */
import type { ChainTick, TickQueue } from '../ports/tick-queue';

/** An in-process tick queue; `drain` stops it and waits for the invocations it started. */
export type InProcessTickQueue = TickQueue & {
  sent: number;
  delivered: number;
  drain(): Promise<void>;
};

/** The SQS event carrying `tick` (the fields the planner reads, and an id). */
export function tickQueueEvent(tick: ChainTick, messageId: string): { Records: Record<string, unknown>[] } {
  return { Records: [{ messageId, eventSource: 'aws:sqs', body: JSON.stringify(tick) }] };
}

/** Creates one; `invoke` runs the planner with the event (its failures are the caller's to record). */
export function createInProcessTickQueue(
  invoke: (event: unknown) => Promise<unknown>,
  o: { duplicate?: (tick: ChainTick) => boolean } = {},
): InProcessTickQueue {
  const timers = new Set<NodeJS.Timeout>();
  const running = new Set<Promise<unknown>>();
  let stopped = false;
  const deliver = (tick: ChainTick, id: string) => {
    q.delivered++;
    const p = invoke(tickQueueEvent(tick, id)).catch(() => undefined);
    running.add(p);
    void p.finally(() => running.delete(p));
  };
  const q: InProcessTickQueue = {
    sent: 0,
    delivered: 0,
    async sendTick(tick, delayMs) {
      if (stopped) return;
      const id = `tick-${tick.stream}-${tick.seq}-${++q.sent}`;
      const t = setTimeout(() => {
        timers.delete(t);
        if (stopped) return;
        deliver(tick, id);
        if (o.duplicate?.(tick)) deliver(tick, id);
      }, delayMs);
      timers.add(t);
    },
    async drain() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      while (running.size) await Promise.all([...running]);
    },
  };
  return q;
}
