/** A marked write's PartiQL statement, planned from the item's image. */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { planMarkedStatement, type MarkedWriteInput } from '../../../lib/ledger/statements.dynamodb';
import { parseUpdate } from '../../../lib/ledger/update-expression.dynamodb';

const N = (n: number): AttributeValue => ({ N: String(n) });
const S = (s: string): AttributeValue => ({ S: s });
const MARK = '_applied:s:t:3';

const write = (expression = 'ADD #t :n SET last = :l', overrides: Partial<MarkedWriteInput> = {}): MarkedWriteInput => ({
  table: 'sink',
  key: { pk: S('acct-1') },
  parsed: parseUpdate(expression, { '#t': 'total' })!,
  values: { ':n': N(5), ':l': N(42) },
  markName: MARK,
  until: 100,
  ...overrides,
});

describe('planMarkedStatement', () => {
  it('inserts the item the update would create when there is none', () => {
    expect(planMarkedStatement(write(), undefined)).toEqual({
      kind: 'statement',
      request: {
        Statement: `INSERT INTO "sink" VALUE {'total' : ?, 'last' : ?, 'pk' : ?, '${MARK}' : ?}`,
        Parameters: [N(5), N(42), S('acct-1'), N(100)],
      },
    });
  });

  it('updates an existing item, guarded by the key, every value the update read and the mark', () => {
    expect(planMarkedStatement(write(), { pk: S('acct-1'), total: N(7), [MARK]: N(60) })).toEqual({
      kind: 'statement',
      request: {
        Statement: `UPDATE "sink" SET "total" = ? SET "last" = ? SET "${MARK}" = ? WHERE "pk" = ? AND "total" = ? AND "${MARK}" < ?`,
        Parameters: [N(12), N(42), N(100), S('acct-1'), N(7), N(100)],
      },
    });
  });

  it('guards an attribute the update reads but the item lacks, and a mark not yet there, with IS MISSING', () => {
    const plan = planMarkedStatement(write('ADD #t :n REMOVE old'), { pk: S('acct-1'), old: S('x') });
    expect(plan).toEqual({
      kind: 'statement',
      request: {
        Statement: `UPDATE "sink" SET "total" = ? SET "${MARK}" = ? REMOVE "old" WHERE "pk" = ? AND "total" IS MISSING AND "${MARK}" IS MISSING`,
        Parameters: [N(5), N(100), S('acct-1')],
      },
    });
  });

  it('skips an item that has the mark at or beyond the batch end', () => {
    expect(planMarkedStatement(write(), { pk: S('acct-1'), [MARK]: N(100) })).toEqual({ kind: 'skip' });
    expect(planMarkedStatement(write(), { pk: S('acct-1'), [MARK]: N(250) })).toEqual({ kind: 'skip' });
  });

  it.each([
    ['an update of a key attribute', write('SET pk = :l')],
    ['a quote in a name', write('SET #t = :l', { parsed: parseUpdate('SET #q = :l', { '#q': 'it"s' })! })],
    ['a quote in the table name', write(undefined, { table: "o'brien" })],
    ['an update DynamoDB could refuse', write('SET a = b + :n')],
  ])('leaves %s to UpdateItem', (_, w) => {
    expect(planMarkedStatement(w, { pk: S('acct-1'), total: N(1) })).toEqual({ kind: 'single' });
  });

  it('leaves an update that read a list, a map or a set to UpdateItem (no equality guard on those)', () => {
    const w = write('SET l = list_append(l, :v)', { values: { ':v': { L: [N(1)] } } });
    expect(planMarkedStatement(w, { pk: S('acct-1'), l: { L: [] } })).toEqual({ kind: 'single' });
  });
});
