/**
 * A virtual clock for tests of code that sleeps (the planner loop): `sleep` registers a timer, and
 * `run` advances time to the earliest timer whenever every task waits on one. Works for code whose
 * other waits resolve without real timers (the in-memory adapters).
 */
export type VirtualClock = {
  nowMs(): number;
  sleep(ms: number): Promise<void>;
  /** Moves time forward by hand (a slow tick): the next timers fire from there. */
  advance(ms: number): void;
  /** Runs `work` to completion, advancing time whenever all of it waits on timers; fails past `limitMs`. */
  run<T>(work: Promise<T>, limitMs?: number): Promise<T>;
};

/** Lets every pending promise continuation run (several rounds: chains of awaits). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}

export function virtualClock(startMs = 1_000_000): VirtualClock {
  let now = startMs;
  const timers: Array<{ atMs: number; seq: number; fire: () => void }> = [];
  let seq = 0;
  return {
    nowMs: () => now,
    sleep(ms) {
      return new Promise<void>((resolve) => {
        timers.push({ atMs: now + Math.max(0, ms), seq: seq++, fire: resolve });
      });
    },
    advance(ms) {
      now += ms;
    },
    async run(work, limitMs = 3_600_000) {
      let done = false;
      const result = work.finally(() => {
        done = true;
      });
      result.catch(() => undefined);
      while (!done) {
        await settle();
        if (done) break;
        timers.sort((a, b) => a.atMs - b.atMs || a.seq - b.seq);
        const next = timers.shift();
        if (!next) throw new Error('virtual clock: nothing to wait for, but the work has not finished');
        if (next.atMs - startMs > limitMs) throw new Error(`virtual clock: past ${limitMs} ms`);
        now = Math.max(now, next.atMs);
        next.fire();
      }
      return result;
    },
  };
}
