/**
 * The built-in handlers table of docs/configuration.md ("Handlers") lists exactly the built-in
 * modules, and each row's sink item names the attributes its handler writes: a script reading the
 * sink table goes by that shape, so a handler that changes it must change the doc too.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { HANDLERS } from '../../../lib/handlers';
import type { HandlerContext, HandlerRecord } from '../../../lib/processor/handler-api';
import type { SinkWrite } from '../../../lib/ports/sink-write';
import { codeSpans, markdownTable } from '../../support/markdown-table';

const record: HandlerRecord = {
  topic: 'payments',
  partition: 0,
  offset: 7,
  timestampMs: 1_700_000_000_000,
  timestampType: 'CreateTime',
  key: Buffer.from('acct-1'),
  value: Buffer.from(JSON.stringify({ amount: 5 })),
  headers: [],
  idempotencyKey: 'payments/0/7',
};
const ctx = { stream: 's1', sinkTable: 'totals', signal: new AbortController().signal, secrets: {} } as unknown as HandlerContext;

/** The attributes an update names: its key's, and the first path of each clause (`ADD #total :t, #count :c SET lastOffset = :l`). */
function updateAttributes(w: SinkWrite): string[] {
  if (!('update' in w)) throw new Error(`expected an update, got ${JSON.stringify(w)}`);
  const u = w.update;
  const paths = u.expression
    .split(/\b(?:SET|ADD|REMOVE|DELETE)\b/)
    .flatMap((clause) => clause.split(','))
    .map((part) => part.trim().split(/[\s=]/)[0] as string)
    .filter(Boolean)
    .map((p) => (p.startsWith('#') ? (u.names?.[p] as string) : p));
  return [...Object.keys(u.key), ...paths];
}

/** What each built-in handler writes to its sink item, read from the handler itself. */
async function writtenAttributes(module: string): Promise<string[]> {
  const sent: Array<{ input: { Item?: Record<string, unknown> } }> = [];
  const dynamo = { send: async (c: { input: { Item?: Record<string, unknown> } }) => void sent.push(c) } as unknown as DynamoDBClient;
  const handler = HANDLERS[module]!({ dynamo, env: { AUDIT_LOG_TABLE: 'audit' } });
  if (handler.mode === 'dynamodb-exactly-once') return (await handler.handle([record], ctx)).flatMap(updateAttributes);
  await handler.handle([record], ctx);
  return sent.flatMap((c) => Object.keys(c.input.Item ?? {}));
}

describe('docs: built-in handlers (docs/configuration.md "Handlers")', () => {
  const table = markdownTable('docs/configuration.md', 'Handlers', { columns: ['module', 'mode', 'what it does', 'sink item'] });

  it('lists every built-in handler module, and no other', () => {
    expect(table.rows.map((r) => codeSpans(r[0] as string)[0]).sort()).toEqual(Object.keys(HANDLERS).sort());
  });

  it.each(Object.keys(HANDLERS))('%s: the sink item names exactly the attributes the handler writes', async (module) => {
    const row = table.rows.find((r) => codeSpans(r[0] as string)[0] === module)!;
    // The item's shape is the cell's first code span, `{pk, total, count}`; a handler writing nothing says `none`.
    const shape = codeSpans(row[3] as string).find((s) => s.startsWith('{'));
    const documented = shape ? shape.replace(/[{}]/g, '').split(/,\s*/) : [];
    expect(documented.sort()).toEqual([...new Set(await writtenAttributes(module))].sort());
  });

  it('running-totals: pk, total and count, as scripts reading the sink table expect', () => {
    const row = table.rows.find((r) => codeSpans(r[0] as string)[0] === 'running-totals')!;
    expect(row[3]).toContain('`{pk, total, count, lastOffset}`');
  });
});
