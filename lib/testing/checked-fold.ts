/**
 * The test kit's check of a folding handler: every `fold.map` key (against the sink table's key
 * attributes, when the test names them) and every `fold.write` (against the item it was given) is
 * checked as it is made, and the first mistake ends the run with what is wrong. The processor would
 * refuse the same write, but only after the range's attempts are used up, naming it among retries.
 */
import { foldWriteProblem } from '../processor/fold-write';
import type { ItemFold, RecordsHandler } from '../processor/handler-api';

export type CheckedHandler = { handler: RecordsHandler; problem(): string | undefined };

/** `h` with its fold checked (other handlers unchanged); `problem()` is the first mistake seen. */
export function withCheckedFold(h: RecordsHandler, sinkTable: string, sinkKey?: readonly string[]): CheckedHandler {
  let first: string | undefined;
  const note = (p: string | undefined) => {
    first ??= p;
  };
  if (h.mode !== 'dynamodb-exactly-once' || !h.fold) return { handler: h, problem: () => first };
  const fold: ItemFold<unknown> = h.fold;
  const checked: ItemFold<unknown> = {
    map(record, ctx) {
      const c = fold.map(record, ctx);
      if (c && sinkKey && (c.table ?? sinkTable) === sinkTable) note(keyProblem(c.key, sinkKey, record.idempotencyKey));
      return c;
    },
    combine: (a, b) => fold.combine(a, b),
    write(item, value) {
      const w = fold.write(item, value);
      note(foldWriteProblem(item, w, sinkTable));
      return w;
    },
  };
  return { handler: { ...h, fold: checked }, problem: () => first };
}

function keyProblem(key: Record<string, unknown>, attributes: readonly string[], record: string): string | undefined {
  const got = Object.keys(key).sort();
  const want = [...attributes].sort();
  if (got.length === want.length && got.every((k, i) => k === want[i])) return undefined;
  return `fold.map returned the item key ${JSON.stringify(key)} for record ${record}, but the sink table's key is ${want.join(' + ')}`;
}
