/**
 * An at-least-once handler's partial batch (`PartialBatchError`): the records it handled count, and
 * it is called again from the failed record, as Lambda's trigger retries from a partial batch
 * response. A record that keeps failing first is isolated and dead-lettered; a count that is not a
 * partial batch fails the attempt, naming it.
 */
import { PartialBatchError, type AtLeastOnceHandler, type HandlerRecord } from '../../../lib/processor/handler-api';
import { processorFixture } from '../../support/processor-fixture';

const records = Array.from({ length: 8 }, (_, i) => ({ key: `k${i}`, value: i === 5 ? 'poison' : `v${i}` }));
const AT_LEAST_ONCE = { handler: { module: 'noop', mode: 'at-least-once' as const }, maxAttempts: 3 };

/** A handler that handles records until one whose value is in `failing`, and reports the ones before it. */
function partialHandler(failing: (r: HandlerRecord, call: number) => boolean) {
  const calls: number[][] = [];
  const done: number[] = [];
  const handler: AtLeastOnceHandler = {
    mode: 'at-least-once',
    handle(batch) {
      calls.push(batch.map((r) => r.offset));
      const i = batch.findIndex((r) => failing(r, calls.length));
      if (i === -1) return void done.push(...batch.map((r) => r.offset));
      done.push(...batch.slice(0, i).map((r) => r.offset));
      if (i === 0) throw new Error(`record ${batch[0]?.offset} failed`);
      throw new PartialBatchError(i, `record ${batch[i]?.offset} failed`);
    },
  };
  return { handler, calls, done };
}

describe('partial batches of an at-least-once handler', () => {
  it('counts what was handled and calls again from the failed record, which then succeeds', async () => {
    // Offset 2 fails on its first call only.
    const h = partialHandler((r, call) => r.offset === 2 && call === 1);
    const t = await processorFixture({ records, stream: AT_LEAST_ONCE, handler: h.handler, deps: { maxChunkRecords: 8 } });
    await t.run();
    expect(h.calls).toEqual([
      [0, 1, 2, 3, 4, 5, 6, 7],
      [2, 3, 4, 5, 6, 7],
    ]);
    expect(h.done).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(t.rangeItem()).toMatchObject({ status: 'done', progress: 8 });
    expect(t.ledger.store('s').deadLetters).toEqual([]);
  });

  it('isolates a record that keeps failing first, dead-letters it after its attempts, and goes on', async () => {
    const h = partialHandler((r) => r.offset === 5);
    const t = await processorFixture({ records, stream: AT_LEAST_ONCE, handler: h.handler, deps: { maxChunkRecords: 8 } });
    await t.run();
    // The batch, then from the failed record, then that record alone (its first failure counted), twice more.
    expect(h.calls.slice(0, 2)).toEqual([
      [0, 1, 2, 3, 4, 5, 6, 7],
      [5, 6, 7],
    ]);
    expect(h.calls.filter((c) => c.length === 1 && c[0] === 5)).toHaveLength(3);
    expect(h.done.sort()).toEqual([0, 1, 2, 3, 4, 6, 7]);
    expect(t.ledger.store('s').deadLetters).toEqual([expect.objectContaining({ offset: 5, attempts: 3 })]);
    expect(t.rangeItem()).toMatchObject({ status: 'done', progress: 8 });
  });

  it('fails the attempt when the count handled is not a partial batch, naming it', async () => {
    const handler: AtLeastOnceHandler = {
      mode: 'at-least-once',
      handle(batch) {
        throw new PartialBatchError(batch.length, 'all of them?');
      },
    };
    const t = await processorFixture({ records, stream: AT_LEAST_ONCE, handler, deps: { maxChunkRecords: 8 } });
    await expect(t.run()).rejects.toThrow('the handler reported 8 of 8 records handled: not a partial batch (all of them?)');
    expect(t.rangeItem()).toMatchObject({ status: 'failed', progress: 0 });
  });
});
