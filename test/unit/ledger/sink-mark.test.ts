/** The applied-offset mark's attribute name, which both ledgers key a sink item's marks by. */
import { markAttribute } from '../../../lib/ports/sink-write';

describe('markAttribute', () => {
  const mark = { stream: 's', topic: 't', partition: 3, until: 10 };
  it.each([
    [{}, '_applied:s:t:3'],
    [{ incarnation: 0, rewinds: 0 }, '_applied:s:t:3'],
    [{ incarnation: 2 }, '_applied:s:t:3#2'],
    [{ rewinds: 1 }, '_applied:s:t:3@1'],
    [{ incarnation: 2, rewinds: 1 }, '_applied:s:t:3#2@1'],
  ])('%j: %s', (extra, name) => {
    expect(markAttribute({ ...mark, ...extra })).toBe(name);
  });

  it('names one attribute per partition, incarnation and rewind, whatever the offset', () => {
    expect(markAttribute({ ...mark, until: 99 })).toBe(markAttribute(mark));
    expect(markAttribute({ ...mark, partition: 4 })).not.toBe(markAttribute(mark));
  });
});
