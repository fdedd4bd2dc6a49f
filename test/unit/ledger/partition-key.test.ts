/** One key per partition: `partitionKey`, which the DynamoDB ledger's stored entry names hash. */
import { entryName } from '../../../lib/ledger/groups.dynamodb';
import { partitionKey, rangeIdentity } from '../../../lib/ranges';

describe('partitionKey', () => {
  it.each([
    ['orders', 0, 'orders/0'],
    ['a.b-c_d', 12, 'a.b-c_d/12'],
  ])('%s %d: %s', (topic, partition, key) => {
    expect(partitionKey(topic, partition)).toBe(key);
  });

  it('keeps the group entry names already stored (FNV-1a of the key, base 36)', () => {
    expect(entryName('orders', 0)).toBe('nvuwqd');
    expect(entryName('orders', 12)).toBe('d0pnvz');
    expect(entryName('a.b-c_d', 7)).toBe('299p4o');
  });
});

describe('rangeIdentity', () => {
  it('names a range by partition, incarnation (absent = 0) and start', () => {
    expect(rangeIdentity({ topic: 'orders', partition: 3, from: 100 })).toBe('orders/3/0/100');
    expect(rangeIdentity({ topic: 'orders', partition: 3, incarnation: 0, from: 100 })).toBe('orders/3/0/100');
    expect(rangeIdentity({ topic: 'orders', partition: 3, incarnation: 2, from: 100 })).toBe('orders/3/2/100');
  });
});
