/** The records a handler receives: every field the reader delivered, unchanged, plus its idempotency key. */
import fc from 'fast-check';
import { toHandlerRecords } from '../../../lib/processor/committer';
import { idempotencyKeyOf } from '../../../lib/processor/handler-api';
import type { KafkaRecord } from '../../../lib/ports/range-reader';

const kafkaRecord = fc.record<KafkaRecord>({
  topic: fc.string({ minLength: 1 }),
  partition: fc.nat({ max: 1000 }),
  offset: fc.nat(),
  timestampMs: fc.nat(),
  timestampType: fc.constantFrom('CreateTime', 'LogAppendTime'),
  key: fc.option(fc.uint8Array().map((b) => Buffer.from(b))),
  value: fc.option(fc.uint8Array().map((b) => Buffer.from(b))),
  headers: fc.array(fc.record({ key: fc.string(), value: fc.option(fc.uint8Array().map((b) => Buffer.from(b))) })),
});

const incarnations = fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined });

/** Checks `out` against `records`: the same fields and values, in order, plus only the key. */
function expectHandlerRecords(records: KafkaRecord[], out: ReturnType<typeof toHandlerRecords>, incarnation: number | undefined): void {
  expect(out).toHaveLength(records.length);
  records.forEach((r, i) => {
    const h = out[i]!;
    expect(Object.keys(h).sort()).toEqual([...Object.keys(r), 'idempotencyKey'].sort());
    for (const [name, value] of Object.entries(r)) expect(h[name as keyof KafkaRecord]).toBe(value);
    const base = `${r.topic}/${r.partition}/${r.offset}`;
    expect(h.idempotencyKey).toBe(incarnation ? `${base}#${incarnation}` : base);
    expect(h.idempotencyKey).toBe(idempotencyKeyOf(r.topic, r.partition, r.offset, incarnation));
  });
}

describe('toHandlerRecords', () => {
  it('keeps every field of each record as it is (the same values), and adds only the idempotency key', () => {
    fc.assert(
      fc.property(fc.array(kafkaRecord, { maxLength: 5 }), incarnations, (records, incarnation) => {
        expectHandlerRecords(records, toHandlerRecords(records, incarnation), incarnation);
      }),
    );
  });

  it("keys a chunk of one partition with the partition's prefix, and any other record with its own", () => {
    fc.assert(
      fc.property(
        kafkaRecord,
        fc.array(fc.nat(), { minLength: 1, maxLength: 20 }),
        kafkaRecord,
        incarnations,
        (r, offsets, other, incarnation) => {
          const chunk = offsets.map((offset) => ({ ...r, offset }));
          expectHandlerRecords(chunk, toHandlerRecords(chunk, incarnation), incarnation);
          const mixed = [...chunk, other];
          expectHandlerRecords(mixed, toHandlerRecords(mixed, incarnation), incarnation);
        },
      ),
    );
  });
});
