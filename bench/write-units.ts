/**
 * Write units as DynamoDB bills them, counted from the requests a client actually sends: an SDK
 * middleware reads each request's JSON body (once per command, the SDK's own retries not counted)
 * and tallies, per table, every item a write touches and whether it was transactional. Units are
 * settled after the run, when the items' stored sizes can be read back (`settle`): a write costs
 * ceil(size / 1 KB) units (at least 1), twice that inside TransactWriteItems.
 *
 * The size of an item is the larger of what the request itself carries (key and attribute values)
 * and the item's size at the end of the run. DynamoDB bills an update by the larger of the item
 * before and after it; running-totals items only grow, so their final size bounds every update's.
 */
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** Bytes per write unit (on-demand and provisioned alike). */
export const WRITE_UNIT_BYTES = 1024;

/** Bytes per read unit (strongly consistent; an eventually consistent read costs half). */
export const READ_UNIT_BYTES = 4096;

/**
 * The size DynamoDB assigns an attribute value (its documented item-size rules). Hand-written: the
 * rules are a few lines of published arithmetic, and the one npm package for it has no repository.
 */
export function attributeSizeBytes(v: AttributeValue): number {
  if (v.S !== undefined) return Buffer.byteLength(v.S, 'utf8');
  if (v.N !== undefined) return numberSizeBytes(v.N);
  if (v.B !== undefined) return binarySizeBytes(v.B);
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.SS) return v.SS.reduce((s, x) => s + Buffer.byteLength(x, 'utf8'), 0);
  if (v.NS) return v.NS.reduce((s, x) => s + numberSizeBytes(x), 0);
  if (v.BS) return v.BS.reduce((s, x) => s + binarySizeBytes(x), 0);
  // A list or map: 3 bytes of overhead plus 1 per element, plus the elements (and a map's names).
  if (v.L) return 3 + v.L.reduce((s, x) => s + 1 + attributeSizeBytes(x), 0);
  if (v.M) return 3 + Object.entries(v.M).reduce((s, [k, x]) => s + 1 + Buffer.byteLength(k, 'utf8') + attributeSizeBytes(x), 0);
  return 0;
}

/** Binary as sent on the wire is base64 text; as an SDK value, bytes. */
function binarySizeBytes(b: Uint8Array | string): number {
  return typeof b === 'string' ? Buffer.from(b, 'base64').length : b.length;
}

/** A number costs 1 byte per two significant digits, plus 1 (leading and trailing zeros trimmed). */
function numberSizeBytes(n: string): number {
  const digits = n
    .replace(/^-/, '')
    .replace(/[eE].*$/, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

/** An item's size: the sum of its attribute names (UTF-8) and values. */
export function itemSizeBytes(item: Record<string, AttributeValue>): number {
  return Object.entries(item).reduce((s, [k, v]) => s + Buffer.byteLength(k, 'utf8') + attributeSizeBytes(v), 0);
}

/** Units one write of an item of `sizeBytes` costs. */
export function writeUnitsFor(sizeBytes: number, transactional: boolean): number {
  const units = Math.max(1, Math.ceil(sizeBytes / WRITE_UNIT_BYTES));
  return transactional ? 2 * units : units;
}

/** The writes of one item: how many plain and transactional, and the largest size a request showed. */
type ItemWrites = { plain: number; transactional: number; requestSizeBytes: number };

export type TableWrites = {
  /** Item writes (a transaction's action or a batch's request counts once per item). */
  writes: number;
  transactionalWrites: number;
  /** Requests that carried at least one write to this table. */
  requests: number;
};

export type WriteTally = {
  /** Per table: what was sent so far. */
  tables(): Record<string, TableWrites>;
  /** Item keys written in `table` (JSON of the key's AttributeValues), to read back their sizes. */
  keysOf(table: string): string[];
  /**
   * Write units of `table`, given the stored size of each written item that still exists; `ideal`:
   * as if every write had been a plain one (no transaction), the floor for the same writes.
   */
  settle(table: string, storedSizeBytes: (key: string) => number | undefined, billing?: 'as-sent' | 'ideal'): number;
  /** Read units of the reads of `table` counted so far (BatchGetItem, GetItem). */
  readUnits(table: string): number;
  /** Forgets everything counted (the next drain starts from zero). */
  reset(): void;
};

/** One item write found in a request body. */
export type ItemWrite = { table: string; key: string; requestSizeBytes: number; transactional: boolean };

/** The key attributes of the tables measured (the ledger's `pk`/`sk`, the sink's `pk`). */
export const KEY_NAMES = ['pk', 'sk'] as const;

/** The item writes in the JSON body of a DynamoDB request of `operation` (empty for reads). */
export function writesOfRequest(operation: string, body: Record<string, unknown>): ItemWrite[] {
  type Action = { TableName: string; Key?: Record<string, AttributeValue>; Item?: Record<string, AttributeValue> };
  const one = (a: Action, transactional: boolean, values?: Record<string, AttributeValue>): ItemWrite => {
    const item = a.Item ?? a.Key ?? {};
    const extra = values ? Object.values(values).reduce((s, v) => s + attributeSizeBytes(v), 0) : 0;
    return { table: a.TableName, key: storedKeyJson(item), requestSizeBytes: itemSizeBytes(item) + extra, transactional };
  };
  const withValues = (a: unknown) => (a as { ExpressionAttributeValues?: Record<string, AttributeValue> }).ExpressionAttributeValues;
  switch (operation) {
    case 'PutItem':
    case 'DeleteItem':
      return [one(body as Action, false)];
    case 'UpdateItem':
      return [one(body as Action, false, withValues(body))];
    case 'TransactWriteItems':
      return ((body.TransactItems as Array<Record<string, Action>>) ?? []).flatMap((t) =>
        Object.values(t).map((a) => one(a, true, withValues(a))),
      );
    case 'BatchWriteItem':
      return Object.entries((body.RequestItems as Record<string, Array<Record<string, Action>>>) ?? {}).flatMap(([table, reqs]) =>
        reqs.map((r) => one({ TableName: table, ...(r.PutRequest ?? r.DeleteRequest) } as Action, false)),
      );
    case 'BatchExecuteStatement':
      return ((body.Statements as Array<{ Statement: string; Parameters?: AttributeValue[] }>) ?? []).flatMap((st) => {
        const w = statementWrite(st.Statement, st.Parameters ?? []);
        return w ? [w] : [];
      });
    default:
      return [];
  }
}

/**
 * The item a PartiQL INSERT or UPDATE writes (`INSERT INTO "t" VALUE {'a' : ?, ...}`, `UPDATE "t"
 * SET "a" = ? ... WHERE "k" = ? AND ...`, the shapes the ledger sends), read from its parameters.
 */
function statementWrite(statement: string, parameters: AttributeValue[]): ItemWrite | undefined {
  const insert = /^INSERT INTO "([^"]+)" VALUE \{(.*)\}$/s.exec(statement);
  if (insert) {
    const names = [...(insert[2] as string).matchAll(/'([^']+)' : \?/g)].map((m) => m[1] as string);
    const item = Object.fromEntries(names.map((n, i) => [n, parameters[i] as AttributeValue]));
    return { table: insert[1] as string, key: storedKeyJson(item), requestSizeBytes: itemSizeBytes(item), transactional: false };
  }
  const update = /^UPDATE "([^"]+)" (.*?) WHERE (.*)$/s.exec(statement);
  if (!update) return undefined;
  // Parameters are numbered in the order of the `?`s: the SET values, then the WHERE comparisons.
  const sets = [...(update[2] as string).matchAll(/SET "([^"]+)" = \?/g)].map((m) => m[1] as string);
  const compared = [...(update[3] as string).matchAll(/"([^"]+)" (?:=|<) \?/g)].map((m) => m[1] as string);
  const key = Object.fromEntries(
    compared.map((n, i) => [n, parameters[sets.length + i] as AttributeValue]).filter(([n]) => KEY_NAMES.includes(n as 'pk')),
  );
  const written = Object.fromEntries(sets.map((n, i) => [n, parameters[i] as AttributeValue]));
  return {
    table: update[1] as string,
    key: storedKeyJson(key),
    requestSizeBytes: itemSizeBytes({ ...key, ...written }),
    transactional: false,
  };
}

/** Counts `writes` into the tally's per-table, per-item state. */
export function createWriteTally(): WriteTally & { add(writes: ItemWrite[]): void; addReads(table: string, units: number): void } {
  let perTable = new Map<string, { stats: TableWrites; items: Map<string, ItemWrites> }>();
  let reads = new Map<string, number>();
  return {
    addReads(table, units) {
      reads.set(table, (reads.get(table) ?? 0) + units);
    },
    readUnits: (table) => reads.get(table) ?? 0,
    add(writes) {
      const seen = new Set<string>();
      for (const w of writes) {
        let t = perTable.get(w.table);
        if (!t) perTable.set(w.table, (t = { stats: { writes: 0, transactionalWrites: 0, requests: 0 }, items: new Map() }));
        if (!seen.has(w.table)) t.stats.requests++;
        seen.add(w.table);
        t.stats.writes++;
        if (w.transactional) t.stats.transactionalWrites++;
        const item = t.items.get(w.key) ?? { plain: 0, transactional: 0, requestSizeBytes: 0 };
        if (w.transactional) item.transactional++;
        else item.plain++;
        item.requestSizeBytes = Math.max(item.requestSizeBytes, w.requestSizeBytes);
        t.items.set(w.key, item);
      }
    },
    tables: () => Object.fromEntries([...perTable].map(([name, t]) => [name, { ...t.stats }])),
    keysOf: (table) => [...(perTable.get(table)?.items.keys() ?? [])],
    settle(table, storedSizeBytes, billing = 'as-sent') {
      let units = 0;
      for (const [key, w] of perTable.get(table)?.items ?? []) {
        const size = Math.max(w.requestSizeBytes, storedSizeBytes(key) ?? 0);
        units += w.plain * writeUnitsFor(size, false) + w.transactional * writeUnitsFor(size, billing === 'as-sent');
      }
      return units;
    },
    reset() {
      perTable = new Map();
      reads = new Map();
    },
  };
}

// A TextDecoder, not Buffer.from: the SDK's body adapter warns when read through string methods.
const UTF8 = new TextDecoder();

/**
 * Adds the counting middleware to `client` (the one the ledger and the sink writes share) and
 * returns its tally. It reads the serialized request, so it sees exactly what goes on the wire.
 * The middleware only keeps each request's body (and a BatchGetItem's answer); they are parsed and
 * counted when the tally is read, after the drain: the benchmark's own counting must not take the
 * CPU of the drain it times (parsing every body during a 200,000-item drain cost ~5% of it).
 */
export function countWriteUnits(client: DynamoDBClient): WriteTally {
  const tally = createWriteTally();
  let pending: { operation: string; body: string | Uint8Array; output?: Record<string, unknown> }[] = [];
  const flush = (): void => {
    for (const { operation, body, output } of pending) {
      const input = JSON.parse(typeof body === 'string' ? body : UTF8.decode(body)) as Record<string, unknown>;
      tally.add(writesOfRequest(operation, input));
      if (output) for (const [table, units] of batchGetReadUnits(input, output)) tally.addReads(table, units);
    }
    pending = [];
  };
  client.middlewareStack.add(
    (next) => async (args) => {
      const req = args.request as { headers?: Record<string, string>; body?: unknown };
      const operation = req.headers?.['x-amz-target']?.split('.')[1];
      const body = typeof req.body === 'string' || req.body instanceof Uint8Array ? req.body : undefined;
      // Kept before it is sent: a write that fails (a condition not met) is billed too.
      const sent = operation && body ? { operation, body, output: undefined as Record<string, unknown> | undefined } : undefined;
      if (sent) pending.push(sent);
      const out = await next(args);
      if (sent && operation === 'BatchGetItem') sent.output = out.output as unknown as Record<string, unknown>;
      return out;
    },
    // After serialization, before the retry middleware (finalizeRequest): once per command.
    { step: 'build', name: 'benchWriteUnitCounter' },
  );
  const flushed = <T>(read: () => T): T => {
    flush();
    return read();
  };
  return {
    tables: () => flushed(() => tally.tables()),
    keysOf: (table) => flushed(() => tally.keysOf(table)),
    settle: (table, storedSizeBytes, billing) => flushed(() => tally.settle(table, storedSizeBytes, billing)),
    readUnits: (table) => flushed(() => tally.readUnits(table)),
    reset() {
      pending = [];
      tally.reset();
    },
  };
}

/**
 * Read units of one BatchGetItem by table: each key asked for costs its item's size rounded up to
 * 4 KB (a key with no item costs the minimum, one 4 KB step), half that when eventually consistent.
 * Keys DynamoDB left unprocessed are not billed.
 */
export function batchGetReadUnits(input: Record<string, unknown>, output: Record<string, unknown>): Map<string, number> {
  const out = new Map<string, number>();
  const asked = (input.RequestItems ?? {}) as Record<string, { Keys?: unknown[]; ConsistentRead?: boolean }>;
  const found = (output.Responses ?? {}) as Record<string, Array<Record<string, AttributeValue>>>;
  const unprocessed = (output.UnprocessedKeys ?? {}) as Record<string, { Keys?: unknown[] }>;
  for (const [table, req] of Object.entries(asked)) {
    const items = found[table] ?? [];
    const missing = (req.Keys?.length ?? 0) - items.length - (unprocessed[table]?.Keys?.length ?? 0);
    const steps = items.reduce((s, i) => s + Math.max(1, Math.ceil(itemSizeBytes(i) / READ_UNIT_BYTES)), 0) + Math.max(0, missing);
    out.set(table, req.ConsistentRead ? steps : steps / 2);
  }
  return out;
}

/** An item's identity as `keysOf` spells it: its key attributes (a Put's item carries more than its key). */
export function storedKeyJson(item: Record<string, AttributeValue>): string {
  return JSON.stringify(KEY_NAMES.filter((name) => item[name] !== undefined).map((name) => [name, item[name]]));
}
