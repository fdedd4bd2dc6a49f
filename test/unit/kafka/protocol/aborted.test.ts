/** Java-consumer-style aborted transaction filtering, on synthetic batch sequences. */
import { controlRecordType, createAbortedBatchFilter, type BatchHeader } from '../../../../lib/kafka/protocol/aborted';
// @ts-expect-error -- kafkajs internal, untyped: its filter, for contrast.
import kafkajsFilterAbortedMessages from 'kafkajs/src/consumer/filterAbortedMessages';

type Step = BatchHeader & { label: string };
const data = (label: string, producerId: number, offset: number, transactional = true): Step => ({
  label,
  producerId: String(producerId),
  lastOffset: offset,
  isTransactional: transactional,
  isControl: false,
});
const marker = (producerId: number, offset: number, type: 'abort' | 'commit'): Step => ({
  label: `${type}(${producerId})`,
  producerId: String(producerId),
  lastOffset: offset,
  isTransactional: true,
  isControl: true,
  controlType: type,
});

/** Labels of data batches the filter keeps (control batches are skipped by the reader anyway). */
function kept(steps: Step[], aborted: Array<{ producerId: number; firstOffset: number }> | null): string[] {
  const isAborted = createAbortedBatchFilter(
    aborted?.map((a) => ({ producerId: String(a.producerId), firstOffset: a.firstOffset })) ?? null,
  );
  return steps.filter((s) => !isAborted(s) && !s.isControl).map((s) => s.label);
}

describe('createAbortedBatchFilter', () => {
  it('drops the data of interleaved aborted transactions, whatever order the broker lists them in', () => {
    // p1 and p2 both open transactions; p2 aborts first, so the broker lists p2 before p1.
    const steps = [
      data('p1-a', 1, 10),
      data('p2-a', 2, 11),
      data('plain', -1, 12, false),
      data('p1-b', 1, 13),
      data('p2-b', 2, 14),
      marker(2, 15, 'abort'),
      data('p1-c', 1, 16),
      marker(1, 17, 'abort'),
      data('p1-next', 1, 18), // p1's next transaction, committed
      marker(1, 19, 'commit'),
    ];
    const listed = [
      { producerId: 2, firstOffset: 11 },
      { producerId: 1, firstOffset: 10 },
    ];
    expect(kept(steps, listed)).toEqual(['plain', 'p1-next']);
    expect(kept(steps, [...listed].reverse())).toEqual(['plain', 'p1-next']);
  });

  it('keeps committed transactions interleaved with aborted ones, and non-transactional batches of the same producer id', () => {
    const steps = [
      data('p1-aborted', 1, 0),
      data('p2-committed', 2, 1),
      data('p1-aborted-2', 1, 2),
      marker(1, 3, 'abort'),
      data('p2-committed-2', 2, 4),
      marker(2, 5, 'commit'),
      data('p1-idempotent', 1, 6, false),
    ];
    expect(kept(steps, [{ producerId: 1, firstOffset: 0 }])).toEqual(['p2-committed', 'p2-committed-2', 'p1-idempotent']);
  });

  it('activates a transaction that began before the first batch seen (a fetch starting mid-transaction)', () => {
    // The range starts at offset 50, inside both transactions (which began at 40 and 45).
    const steps = [data('p2-mid', 2, 50), data('p1-mid', 1, 51), marker(1, 52, 'abort'), marker(2, 53, 'abort'), data('p3', 3, 54)];
    expect(
      kept(steps, [
        { producerId: 1, firstOffset: 40 },
        { producerId: 2, firstOffset: 45 },
      ]),
    ).toEqual(['p3']);
  });

  it('uses the batch end: a transaction starting inside a batch affects that batch', () => {
    // A batch [20..24] whose producer's aborted transaction starts at 22 (e.g. the batch's own first offset after compaction).
    expect(kept([data('p1', 1, 24), marker(1, 25, 'abort')], [{ producerId: 1, firstOffset: 22 }])).toEqual([]);
    // ...but one starting after the batch does not.
    expect(kept([data('p1-before', 1, 21), data('p1', 1, 24), marker(1, 25, 'abort')], [{ producerId: 1, firstOffset: 22 }])).toEqual([
      'p1-before',
    ]);
  });

  it('keeps everything with no aborted transactions listed (read_uncommitted, or none overlap)', () => {
    expect(kept([data('a', 1, 0), marker(1, 1, 'commit')], null)).toEqual(['a']);
    expect(kept([data('a', 1, 0), marker(1, 1, 'abort')], [])).toEqual(['a']);
  });

  it('does better than kafkajs 2.2.4 filterAbortedMessages on the same interleaving', () => {
    // Record-level view for kafkajs: offsets 10 (p2, aborted), 11 (p1, aborted), 12 (plain), abort markers.
    const msg = (offset: number, producerId: number, inTransaction: boolean, control?: 'abort') => ({
      offset: String(offset),
      key: control ? Buffer.from([0, 0, 0, 0]) : Buffer.from('k'),
      isControlRecord: control !== undefined,
      batchContext: { producerId: String(producerId), inTransaction },
    });
    const messages = [msg(10, 2, true), msg(11, 1, true), msg(12, -1, false), msg(13, 1, true, 'abort'), msg(14, 2, true, 'abort')];
    const abortedTransactions = [
      { producerId: '1', firstOffset: '11' },
      { producerId: '2', firstOffset: '10' },
    ];
    const viaKafkajs = (
      kafkajsFilterAbortedMessages({ messages, abortedTransactions }) as Array<{ offset: string; isControlRecord: boolean }>
    )
      .filter((m) => !m.isControlRecord)
      .map((m) => m.offset);
    expect(viaKafkajs).toContain('10'); // an aborted record delivered

    const ours = kept(
      [data('10', 2, 10), data('11', 1, 11), data('12', -1, 12, false), marker(1, 13, 'abort'), marker(2, 14, 'abort')],
      [
        { producerId: 1, firstOffset: 11 },
        { producerId: 2, firstOffset: 10 },
      ],
    );
    expect(ours).toEqual(['12']);
  });
});

describe('controlRecordType', () => {
  it('reads the type from the control record key', () => {
    expect(controlRecordType(Buffer.from([0, 0, 0, 0]))).toBe('abort');
    expect(controlRecordType(Buffer.from([0, 0, 0, 1]))).toBe('commit');
    expect(controlRecordType(Buffer.from([0, 0, 0, 5]))).toBe('unknown');
    expect(controlRecordType(null)).toBe('unknown');
    expect(controlRecordType(Buffer.from([0]))).toBe('unknown');
  });
});
