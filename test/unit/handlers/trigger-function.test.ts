/**
 * A trigger function as the processor runs it (`handler.triggerFunction`), through the test kit on
 * the in-memory ledger: events cut by the batch size, a partial batch response retried from its
 * failed record, a throw isolated to its record and dead-lettered, a callback-style function, a
 * malformed answer failing the attempt with the function and the identifier named, and a module
 * without the export named.
 */
import type { Context, MSKEvent } from 'aws-lambda';
import { runHandler, triggerFunction } from '../../../lib/testing';

type Call = { partitions: string[]; offsets: number[]; context: Context };

/** A trigger function keeping what it was called with; `answer` decides its reply. */
function recording(answer: (event: MSKEvent) => unknown = () => undefined) {
  const calls: Call[] = [];
  const fn = async (event: MSKEvent, context: Context) => {
    calls.push({
      partitions: Object.keys(event.records),
      offsets: Object.values(event.records).flatMap((rs) => rs.map((r) => r.offset)),
      context,
    });
    return answer(event);
  };
  return { fn, calls };
}

const values = (n: number, poison?: number) =>
  Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: i === poison ? 'poison' : `v${i}` }));
const valueOf = (event: MSKEvent, offset: number) =>
  Buffer.from(
    Object.values(event.records)
      .flat()
      .find((r) => r.offset === offset)?.value ?? '',
    'base64',
  ).toString();

describe('trigger functions', () => {
  it('calls the function with events of at most batchSize records of one partition range, with a Lambda-like context', async () => {
    const f = recording();
    const res = await runHandler(triggerFunction(f.fn as never, { batchSize: 3 }), values(7), { stream: { maxAttempts: 2 } });
    expect(f.calls.map((c) => c.offsets)).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
    expect(f.calls.every((c) => c.partitions.length === 1 && c.partitions[0] === 'test-topic-0')).toBe(true);
    const ctx = f.calls[0]!.context;
    expect(ctx.awsRequestId).toBe('test-topic-0-0');
    expect(ctx.getRemainingTimeInMillis()).toBeGreaterThan(0);
    expect(res.progress).toEqual([expect.objectContaining({ committed: 7 })]);
    expect(res.deadLetters).toEqual([]);
  });

  it('honours a partial batch response: what came before the failed record counts, and the function gets the batch again from it', async () => {
    let failedOnce = false;
    const f = recording((event) => {
      const offsets = Object.values(event.records)
        .flat()
        .map((r) => r.offset);
      if (failedOnce || !offsets.includes(2)) return { batchItemFailures: [] };
      failedOnce = true;
      return { batchItemFailures: [3, 2].map((offset) => ({ itemIdentifier: { partition: 'test-topic-0', offset } })) };
    });
    const res = await runHandler(triggerFunction(f.fn as never, { batchSize: 10 }), values(5));
    expect(f.calls.map((c) => c.offsets)).toEqual([
      [0, 1, 2, 3, 4],
      [2, 3, 4],
    ]);
    expect(res.deadLetters).toEqual([]);
    expect(res.progress).toEqual([expect.objectContaining({ committed: 5 })]);
  });

  it('dead-letters a record the function keeps failing on, alone after the batch failed, and handles the others', async () => {
    const f = recording((event) => {
      if (
        Object.values(event.records)
          .flat()
          .some((r) => valueOf(event, r.offset) === 'poison')
      )
        throw new Error('cannot handle poison');
    });
    const res = await runHandler(triggerFunction(f.fn as never), values(4, 2), { stream: { maxAttempts: 3 } });
    expect(res.deadLetters).toEqual([
      expect.objectContaining({ offset: 2, attempts: 3, error: expect.stringContaining('cannot handle poison') }),
    ]);
    expect(res.progress).toEqual([expect.objectContaining({ committed: 4 })]);
    // The batch, then record by record: 0, 1, 2 three times, 3.
    expect(f.calls.map((c) => c.offsets)).toEqual([[0, 1, 2, 3], [0], [1], [2], [2], [2], [3]]);
  });

  it('runs a callback-style function, and an answer naming a record not in the batch fails the attempt, naming both', async () => {
    const called: number[] = [];
    const withCallback = (event: MSKEvent, _context: Context, callback: (err?: unknown, result?: unknown) => void) => {
      called.push(...Object.values(event.records).flatMap((rs) => rs.map((r) => r.offset)));
      setTimeout(() => callback(undefined, { batchItemFailures: [] }), 1);
    };
    const ok = await runHandler(triggerFunction(withCallback as never), values(2));
    expect(called).toEqual([0, 1]);
    expect(ok.progress).toEqual([expect.objectContaining({ committed: 2 })]);

    const bad = recording(() => ({ batchItemFailures: [{ itemIdentifier: { partition: 'test-topic-0', offset: 99 } }] }));
    await expect(runHandler(triggerFunction(bad.fn as never), values(2), { stream: { maxAttempts: 1 } })).rejects.toThrow(
      /the trigger function given to the test kit.*99/,
    );
  });

  it('refuses a module without the named export, listing the functions it has', () => {
    expect(() => triggerFunction(require.resolve('../../fixtures/trigger-functions/calls.ts'), { export: 'handler' })).toThrow(
      /no function exported as "handler" \(handler.triggerFunction.export\); the module exports these functions: recordCall/,
    );
  });
});
