/** The record a handler receives: every field the reader delivered, unchanged, plus its idempotency key. */
import fc from 'fast-check';
import { toHandlerRecord } from '../../../lib/processor/committer';
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

describe('toHandlerRecord', () => {
  it('keeps every field of the record as it is (the same values), and adds only the idempotency key', () => {
    fc.assert(
      fc.property(kafkaRecord, fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }), (r, incarnation) => {
        const out = toHandlerRecord(r, incarnation);
        expect(Object.keys(out).sort()).toEqual([...Object.keys(r), 'idempotencyKey'].sort());
        for (const [name, value] of Object.entries(r)) expect(out[name as keyof KafkaRecord]).toBe(value);
        const base = `${r.topic}/${r.partition}/${r.offset}`;
        expect(out.idempotencyKey).toBe(incarnation ? `${base}#${incarnation}` : base);
      }),
    );
  });
});
