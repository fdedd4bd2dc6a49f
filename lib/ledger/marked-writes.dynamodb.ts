/**
 * A folded batch's marked sink writes on DynamoDB, at one write unit per item and a few requests
 * per hundred items. Not one transaction: each write is guarded by its own mark, so atomicity across
 * items buys nothing and would double the write units (docs/architecture.md, "Folded exactly-once
 * batches").
 *
 * 1. The items are read (BatchGetItem, eventually consistent: half a read unit each).
 * 2. Each write becomes a PartiQL statement planned from that image (`statements.dynamodb.ts`);
 *    statements go out 25 to a BatchExecuteStatement. An item that already has the mark is skipped.
 * 3. Whatever cannot go that way is sent as a plain conditional UpdateItem, which DynamoDB applies
 *    or refuses itself: a failed statement (the item changed since it was read, throttling), an
 *    update outside the planner's subset, and the first write of each update expression, so that
 *    DynamoDB validates the handler's expression (reserved words, unused values) before any
 *    statement carries it.
 */
import {
  BatchExecuteStatementCommand,
  BatchGetItemCommand,
  ConditionalCheckFailedException,
  type AttributeValue,
  type BatchStatementRequest,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mapWithConcurrency } from '../concurrency';
import { markAttribute, type MarkedWritesOutcome, type SinkMark, type SinkWrite } from '../ports/sink-write';
import { isTransient, LEDGER_CONFLICT_RETRIES } from './retry.dynamodb';
import { clockWithSleep, retry } from '../retry';
import { markedSinkAction } from './sink.dynamodb';
import { planMarkedStatement, type MarkedWriteInput } from './statements.dynamodb';
import type { TxAction } from './transactions.dynamodb';
import { parseUpdate } from './update-expression.dynamodb';
import type { TranslatingSend } from './errors.dynamodb';

/** Statements in one BatchExecuteStatement (DynamoDB's limit). */
const STATEMENTS_PER_REQUEST = 25;
/** Keys in one BatchGetItem (DynamoDB's limit). */
const KEYS_PER_READ = 100;
/** Update expressions remembered as accepted; a handler making up more than this sends the rest as UpdateItems. */
const MAX_VALIDATED_EXPRESSIONS = 1024;

export type MarkedWriterDeps = {
  /** Sends one request on the ledger's clients, translating the SDK's errors (the ledger's edge), except a failed condition. */
  send: TranslatingSend<{ client: DynamoDBClient; doc: DynamoDBDocumentClient }>;
  sleep: (ms: number) => Promise<void>;
  /** Requests of one call in flight at once. */
  concurrency: number;
};

type Prepared = { index: number; action: TxAction; input?: MarkedWriteInput; validation: string };
type Outcome = 'applied' | 'skipped';

/** Creates the writer of marked sink writes; it remembers which update expressions DynamoDB accepted. */
export function createMarkedWriter(deps: MarkedWriterDeps) {
  const validated = new Set<string>();
  const clock = clockWithSleep(deps.sleep);
  const accepted = (p: Prepared) => validated.size < MAX_VALIDATED_EXPRESSIONS && validated.add(p.validation);
  let statementsRefused = false;

  /** One marked write as a plain conditional UpdateItem, retried alone after throttling or a 5xx. */
  const applyOne = (what: string, p: Prepared): Promise<Outcome> => {
    const input = p.action.Update as ConstructorParameters<typeof UpdateCommand>[0];
    return retry(
      async (): Promise<Outcome> => {
        try {
          await deps.send(what, ({ doc }) => doc.send(new UpdateCommand(input)));
          accepted(p);
          return 'applied';
        } catch (err) {
          if (!(err instanceof ConditionalCheckFailedException)) throw err;
          accepted(p);
          return 'skipped';
        }
      },
      LEDGER_CONFLICT_RETRIES,
      // Its mark makes the write safe to send again even after an ambiguous server error. What
      // reaches here outlasted the SDK's own attempts (3 per send): docs/architecture.md, "Retries", on the stack.
      { isRetriable: isTransient, clock },
    );
  };

  /** Item images by key, read eventually consistent; a key left out (unprocessed, failed) has no entry. */
  const readImages = async (what: string, inputs: MarkedWriteInput[]): Promise<Map<string, Record<string, AttributeValue> | undefined>> => {
    const images = new Map<string, Record<string, AttributeValue> | undefined>();
    const byTable = new Map<string, MarkedWriteInput[]>();
    for (const w of inputs) byTable.set(w.table, [...(byTable.get(w.table) ?? []), w]);
    const requests = [...byTable].flatMap(([table, ws]) => chunks(ws, KEYS_PER_READ).map((part) => ({ table, part })));
    await mapWithConcurrency(requests, deps.concurrency, async ({ table, part }) => {
      const names = [...new Set(part.flatMap((w) => [...Object.keys(w.key), ...w.parsed.reads, w.markName]))];
      const res = await deps.send(`${what} (read)`, ({ client }) =>
        client.send(
          new BatchGetItemCommand({
            RequestItems: {
              [table]: {
                Keys: part.map((w) => w.key),
                ProjectionExpression: names.map((_, i) => `#a${i}`).join(', '),
                ExpressionAttributeNames: Object.fromEntries(names.map((n, i) => [`#a${i}`, n])),
              },
            },
          }),
        ),
      );
      const keyNames = Object.keys(part[0]!.key).sort();
      const unprocessed = new Set((res.UnprocessedKeys?.[table]?.Keys ?? []).map((k) => keyId(table, k, keyNames)));
      const found = new Map((res.Responses?.[table] ?? []).map((item) => [keyId(table, item, keyNames), item]));
      for (const w of part) {
        const id = keyId(table, w.key, keyNames);
        if (!unprocessed.has(id)) images.set(id, found.get(id));
      }
    });
    return images;
  };

  /** Sends statements 25 to a request; returns the indexes (into `requests`) of those that failed. */
  const execute = async (what: string, requests: BatchStatementRequest[]): Promise<Set<number>> => {
    const failed = new Set<number>();
    const parts = chunks(
      requests.map((r, i) => ({ r, i })),
      STATEMENTS_PER_REQUEST,
    );
    await mapWithConcurrency(parts, deps.concurrency, async (part) => {
      try {
        const res = await deps.send(`${what} (statements)`, ({ client }) =>
          client.send(new BatchExecuteStatementCommand({ Statements: part.map((p) => p.r) })),
        );
        part.forEach((p, j) => res.Responses?.[j]?.Error && failed.add(p.i));
      } catch (err) {
        if (refusesStatements(err)) statementsRefused = true;
        part.forEach((p) => failed.add(p.i));
      }
    });
    return failed;
  };

  /** Applies `writes` (one per item) with `mark`; see the file's comment for the steps. */
  async function apply(what: string, mark: SinkMark, writes: SinkWrite[]): Promise<MarkedWritesOutcome> {
    const prepared = writes.map((w, index) => prepare(w, mark, index));
    const outcomes = new Array<Outcome>(prepared.length);
    const single: Prepared[] = [];

    // 0. The first write of an expression DynamoDB has not yet accepted goes alone, before the rest.
    const firstOfExpression = new Map<string, Prepared>();
    for (const p of prepared)
      if (!validated.has(p.validation) && !firstOfExpression.has(p.validation)) firstOfExpression.set(p.validation, p);
    const firsts = [...firstOfExpression.values()];
    (await mapWithConcurrency(firsts, deps.concurrency, (p) => applyOne(what, p))).forEach((o, j) => (outcomes[firsts[j]!.index] = o));

    // 1. Read the items of the writes that may go as statements.
    const rest = prepared.filter((p) => firstOfExpression.get(p.validation) !== p);
    const batchable = statementsRefused ? [] : rest.filter((p) => p.input && validated.has(p.validation));
    for (const p of rest) if (!batchable.includes(p)) single.push(p);
    const images = batchable.length > 0 ? await readImagesOrNone(what, batchable) : new Map();

    // 2. Plan and send the statements; a failed one goes single.
    const sent: Prepared[] = [];
    const requests: BatchStatementRequest[] = [];
    for (const p of batchable) {
      const w = p.input as MarkedWriteInput;
      const id = keyId(w.table, w.key, Object.keys(w.key).sort());
      const plan = images.has(id) ? planMarkedStatement(w, images.get(id)) : ({ kind: 'single' } as const);
      if (plan.kind === 'skip') outcomes[p.index] = 'skipped';
      else if (plan.kind === 'single') single.push(p);
      else {
        sent.push(p);
        requests.push(plan.request);
      }
    }
    const failed = requests.length > 0 ? await execute(what, requests) : new Set<number>();
    sent.forEach((p, j) => (failed.has(j) ? single.push(p) : (outcomes[p.index] = 'applied')));

    // 3. Everything else as plain conditional UpdateItems.
    (await mapWithConcurrency(single, deps.concurrency, (p) => applyOne(what, p))).forEach((o, j) => (outcomes[single[j]!.index] = o));
    const applied = outcomes.filter((o) => o === 'applied').length;
    return { applied, skipped: outcomes.length - applied };
  }

  /** The images, or none when the read failed: every write then goes as a plain UpdateItem. */
  async function readImagesOrNone(what: string, batchable: Prepared[]) {
    try {
      return await readImages(
        what,
        batchable.map((p) => p.input as MarkedWriteInput),
      );
    } catch (err) {
      if (refusesStatements(err)) statementsRefused = true;
      return new Map<string, Record<string, AttributeValue> | undefined>();
    }
  }

  return { apply };
}

/** A write with its UpdateItem, and what a statement needs when its update is in the planner's subset. */
function prepare(w: SinkWrite, mark: SinkMark, index: number): Prepared {
  const action = markedSinkAction(w, mark);
  const u = (w as Extract<SinkWrite, { update: unknown }>).update;
  const validation = JSON.stringify([u.expression, Object.entries(u.names ?? {}).sort(), Object.keys(u.values ?? {}).sort()]);
  const parsed = parseUpdate(u.expression, u.names);
  if (!parsed) return { index, action, validation };
  try {
    const opts = { removeUndefinedValues: true, convertClassInstanceToMap: false };
    const input: MarkedWriteInput = {
      table: action.Update?.TableName as string,
      key: marshall(u.key, opts),
      parsed,
      values: marshall(u.values ?? {}, opts),
      markName: markAttribute(mark),
      until: mark.until,
    };
    return { index, action, validation, input };
  } catch {
    return { index, action, validation }; // a value the document client marshals differently: leave it to UpdateItem
  }
}

/**
 * A refusal that will not pass (no IAM permission for BatchGetItem or PartiQL, a store without
 * PartiQL): this writer sends plain UpdateItems from then on. Anything else fails only this call's
 * statements over to them.
 */
function refusesStatements(err: unknown): boolean {
  const name = ((err as { cause?: { name?: string } })?.cause ?? (err as { name?: string }))?.name;
  return name === 'AccessDeniedException' || name === 'UnknownOperationException';
}

/** The key's identity in `table`: its attributes in the order of `order` (the write's key). */
function keyId(table: string, item: Record<string, AttributeValue>, order: string[]): string {
  return JSON.stringify([table, ...order.map((k) => item[k])]);
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
