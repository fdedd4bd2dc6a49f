/** The in-process dispatcher as the local runtime's reserved concurrency: a cap, a FIFO queue, nothing lost. */
import { createInProcessDispatcher } from '../../../lib/dispatch/dispatcher.local';
import type { RangePayload, RangesPayload } from '../../../lib/ranges';

const range = (partition: number, from = 0): RangePayload => ({ stream: 's', topic: 't', partition, from, until: from + 5 });

/** A processor that runs until `release` is called for its range; records start order and peak concurrency. */
function gated() {
  const started: RangePayload[] = [];
  const gates = new Map<string, () => void>();
  let running = 0;
  let peak = 0;
  const key = (r: RangePayload) => `${r.partition}/${r.from}`;
  const processRange = (r: RangePayload) =>
    new Promise<void>((resolve) => {
      started.push(r);
      peak = Math.max(peak, ++running);
      gates.set(key(r), () => {
        running--;
        resolve();
      });
    });
  const release = async (r: RangePayload) => {
    gates.get(key(r))?.();
    await new Promise((r2) => setImmediate(r2));
  };
  return { processRange, started, release, peak: () => peak };
}

describe('in-process dispatcher', () => {
  it('runs at most maxConcurrency processors; the rest wait in dispatch order and all run', async () => {
    const g = gated();
    const d = createInProcessDispatcher((p) => g.processRange(p as RangePayload), undefined, { maxConcurrency: 3 });
    const ranges = Array.from({ length: 10 }, (_, i) => range(i));
    expect(await d.dispatch(ranges)).toEqual(ranges.map(() => ({ ok: true })));
    await new Promise((r) => setImmediate(r));
    expect(d.inFlight()).toBe(3);
    expect(d.queued()).toEqual(ranges.slice(3));
    let idle = false;
    void d.idle().then(() => (idle = true));
    for (const r of ranges) await g.release(r);
    await d.idle();
    expect(idle).toBe(true);
    expect(g.started).toEqual(ranges);
    expect(g.peak()).toBe(3);
  });

  it('does not queue a range twice while it waits (a re-dispatch of the same payload)', async () => {
    const g = gated();
    const d = createInProcessDispatcher((p) => g.processRange(p as RangePayload), undefined, { maxConcurrency: 1 });
    await d.dispatch([range(0), range(1)]);
    await d.dispatch([range(1), range(2)]);
    expect(d.queued()).toEqual([range(1), range(2)]);
    for (const r of [range(0), range(1), range(2)]) await g.release(r);
    await d.idle();
    expect(g.started).toEqual([range(0), range(1), range(2)]);
  });

  it('drops what is still queued on shutdown; idle then waits only for the running ones', async () => {
    const g = gated();
    const d = createInProcessDispatcher((p) => g.processRange(p as RangePayload), undefined, { maxConcurrency: 2 });
    await d.dispatch([range(0), range(1), range(2), range(3)]);
    expect(d.dropQueued()).toBe(2);
    await g.release(range(0));
    await g.release(range(1));
    await d.idle();
    expect(g.started).toEqual([range(0), range(1)]);
  });

  it('reports a failing processor to onError and keeps going', async () => {
    const errors: string[] = [];
    const d = createInProcessDispatcher(
      async (p) => {
        if ((p as RangePayload).partition === 1) throw new Error('boom');
      },
      (p, e) => errors.push(`${(p as RangePayload).partition}: ${(e as Error).message}`),
      { maxConcurrency: 1 },
    );
    await d.dispatch([range(0), range(1), range(2)]);
    await d.idle();
    expect(errors).toEqual(['1: boom']);
  });
});

describe('in-process dispatcher invocations', () => {
  it('runs the ranges of one invocation together, as one payload of several ranges, and a lone range as itself', async () => {
    const payloads: Array<RangePayload | RangesPayload> = [];
    const d = createInProcessDispatcher(async (p) => void payloads.push(p), undefined, { maxConcurrency: 1 });
    const ranges = [range(0), range(1), range(2)];
    expect(await d.dispatch(ranges, { invocations: [[0, 2], [1]] })).toEqual(ranges.map(() => ({ ok: true })));
    await d.idle();
    const { stream: _s, ...r0 } = range(0);
    const { stream: _t, ...r2 } = range(2);
    expect(payloads).toEqual([{ stream: range(0).stream, ranges: [r0, r2] }, range(1)]);
  });
});

describe('in-process dispatcher order', () => {
  it("queues a split partition's ranges apart: one range per partition at a time", async () => {
    const g = gated();
    const d = createInProcessDispatcher((p) => g.processRange(p as RangePayload), undefined, { maxConcurrency: 1 });
    await d.dispatch([range(0, 0), range(0, 5), range(0, 10), range(1, 0), range(1, 5), range(2, 0)]);
    expect([...g.started, ...d.queued()].map((r) => `${r.partition}@${r.from}`)).toEqual(['0@0', '1@0', '2@0', '0@5', '1@5', '0@10']);
    for (const r of [...g.started, ...d.queued()]) await g.release(r);
    await d.idle();
  });
});
