/**
 * `dead-letters <stream>`: list the records the handler kept rejecting, and re-drive one or all of
 * them once the handler (or the data) is fixed. A re-drive reads the record again from Kafka by
 * offset through the processor's range reader (falling back to the copy stored with the dead
 * letter when retention or compaction removed it; a dead letter that keeps only coordinates is
 * then refused) and runs the stream's handler on it:
 * - exactly-once handlers: the handler's sink writes and the dead letter's `redrivenAtMs` go in one
 *   DynamoDB transaction, so a re-drive applies once, however often it is attempted;
 * - at-least-once handlers: the handler runs, then the dead letter is marked (a crash in between
 *   re-drives it again; the record's idempotency key `topic/partition/offset` is unchanged).
 * A stream that decodes values or keys (`value` / `key`) decodes the re-driven record as the
 * processor does, so the handler gets `decoded` as it would have; a record that still cannot be
 * decoded (a schema registered since makes it decodable) fails its re-drive with the reason.
 */
import type { StreamConfig } from '../config/schema';
import { ValidationError } from '../errors';
import { OffsetOutOfRangeError, PartitionNotFoundError } from '../ports/range-reader';
import { resolveSecret } from '../kafka/secrets';
import type { DeadLetter, PendingDelivery } from '../ports/ledger-state';
import type { SinkWrite } from '../ports/sink-write';
import type { KafkaRecord } from '../ports/range-reader';
import { idempotencyKeyOf, type HandlerRecord } from '../processor/handler-api';
import { createDecodeStage } from '../processor/decode-stage';
import { resolveHandlerSecrets } from '../processor/handler-secrets';
import { judgeChunk, type RecordStage } from '../processor/record-gate';
import { processSchemaRegistries } from '../schemas/registries';
import type { OpsContext } from './context';
import { isoTime, table } from './format';
import { onlyCoordinatesKeptMessage, truncatedCopyMessage } from './messages';

/** `topic/partition/offset`, the record's idempotency key. */
function deadLetterId(d: { topic: string; partition: number; offset: number }): string {
  return `${d.topic}/${d.partition}/${d.offset}`;
}

/** Parses `topic/partition/offset` (topic names cannot contain '/'). */
export function parseDeadLetterId(text: string): { topic: string; partition: number; offset: number } {
  const m = /^([a-zA-Z0-9._-]{1,249})\/(\d{1,10})\/(\d{1,16})$/.exec(text.trim());
  if (!m) throw new ValidationError(`invalid dead letter id "${text}": expected topic/partition/offset, e.g. payments/3/1042`);
  return { topic: m[1] as string, partition: Number(m[2]), offset: Number(m[3]) };
}

export type RedriveResult = {
  id: string;
  outcome: 'redriven' | 'already-redriven' | 'failed';
  /** Where the record came from: Kafka (exact), or the copy stored with the dead letter. */
  source?: 'kafka' | 'stored';
  error?: string;
};

/** Re-drives the dead letters `ids` (or every pending one with `all`); one failure does not stop the rest. */
export async function redriveDeadLetters(
  ctx: OpsContext,
  stream: StreamConfig,
  sel: { ids?: string[]; all?: boolean; nowMs: () => number },
): Promise<RedriveResult[]> {
  const letters = await ctx.ledger.listDeadLetters(stream.id);
  const byId = new Map(letters.map((d) => [deadLetterId(d), d]));
  let chosen: DeadLetter[];
  if (sel.all) chosen = letters.filter((d) => d.redrivenAtMs === undefined);
  else {
    const ids = (sel.ids ?? []).map((t) => deadLetterId(parseDeadLetterId(t)));
    const missing = ids.filter((id) => !byId.has(id));
    if (missing.length) throw new ValidationError(`no dead letter ${missing.join(', ')} in stream ${stream.id}`);
    chosen = ids.map((id) => byId.get(id) as DeadLetter);
  }
  const handler = ctx.handlerFor(stream);
  // As the processor does: a secret that cannot be read stops the re-drive before any record is handled.
  const secrets = await resolveHandlerSecrets(stream, resolveSecret);
  const decode = createDecodeStage(
    { stream: stream.id, value: stream.value, key: stream.key },
    ctx.registries ?? processSchemaRegistries(),
  );
  const out: RedriveResult[] = [];
  for (const d of chosen) {
    const id = deadLetterId(d);
    if (d.redrivenAtMs !== undefined) {
      out.push({ id, outcome: 'already-redriven' });
      continue;
    }
    let source: 'kafka' | 'stored' | undefined;
    try {
      const got = await recordOf(ctx, stream, d);
      source = got.source;
      const rec = await decoded(decode, { ...got.record, idempotencyKey: idempotencyKeyOf(d.topic, d.partition, d.offset, d.incarnation) });
      const hctx = { stream: stream.id, sinkTable: stream.handler?.sinkTable, signal: new AbortController().signal, secrets };
      let writes: SinkWrite[] = [];
      if (handler.mode === 'dynamodb-exactly-once') {
        writes = (await handler.handle([rec], hctx)).map((w) => withTable(w, stream.handler?.sinkTable));
        if (writes.length > 98)
          throw new Error(`the handler returned ${writes.length} writes for one record; one transaction holds at most 98`);
      } else {
        await handler.handle([rec], hctx);
      }
      const res = await ctx.ledger.redriveDeadLetter({
        stream: stream.id,
        topic: d.topic,
        partition: d.partition,
        offset: d.offset,
        incarnation: d.incarnation,
        nowMs: sel.nowMs(),
        sinkWrites: writes,
      });
      out.push({ id, outcome: res === 'applied' ? 'redriven' : 'already-redriven', source });
    } catch (err) {
      out.push({ id, outcome: 'failed', source, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
    }
  }
  return out;
}

/** The record as the handler gets it: decoded when the stream decodes, else as it is; throws why it cannot be decoded. */
async function decoded(stage: RecordStage | undefined, rec: HandlerRecord): Promise<HandlerRecord> {
  if (!stage) return rec;
  const [verdict] = await judgeChunk([stage], [rec]);
  if (verdict?.kind === 'pass') return verdict.record;
  throw new Error(verdict?.kind === 'reject' ? verdict.error : 'not decoded');
}

/** The dead-lettered record from Kafka by offset, else from the stored copy (when complete). */
async function recordOf(
  ctx: OpsContext,
  stream: StreamConfig,
  d: DeadLetter,
): Promise<{ record: KafkaRecord; source: 'kafka' | 'stored' }> {
  try {
    const reader = await ctx.readerFor(stream);
    for await (const chunk of reader.read({
      topic: d.topic,
      partition: d.partition,
      from: d.offset,
      until: d.offset + 1,
      isolationLevel: stream.isolationLevel,
    })) {
      const r = chunk.records.find((x) => x.offset === d.offset);
      if (r) return { record: r, source: 'kafka' };
    }
  } catch (err) {
    if (!(err instanceof OffsetOutOfRangeError) && !(err instanceof PartitionNotFoundError)) throw err;
  }
  if (d.kept === 'coordinates') {
    throw new Error(onlyCoordinatesKeptMessage(deadLetterId(d)));
  }
  if (d.truncated) throw new Error(truncatedCopyMessage(deadLetterId(d), d.valueBytes));
  const record: KafkaRecord = {
    topic: d.topic,
    partition: d.partition,
    offset: d.offset,
    timestampMs: d.timestampMs,
    timestampType: d.timestampType ?? 'CreateTime',
    key: d.keyBase64 === null ? null : Buffer.from(d.keyBase64, 'base64'),
    value: d.valueBase64 === null ? null : Buffer.from(d.valueBase64, 'base64'),
    headers: d.headers.map((h) => ({ key: h.key, value: h.valueBase64 === null ? null : Buffer.from(h.valueBase64, 'base64') })),
  };
  return { record, source: 'stored' };
}

function withTable(w: SinkWrite, table: string | undefined): SinkWrite {
  if ('put' in w) return { put: { ...w.put, table: w.put.table ?? table } };
  if ('delete' in w) return { delete: { ...w.delete, table: w.delete.table ?? table } };
  return { update: { ...w.update, table: w.update.table ?? table } };
}

/** Deliveries to failure destinations still owed, per dead letter id (`topic/partition/offset`). */
export function undeliveredById(deliveries: readonly PendingDelivery[]): Map<string, PendingDelivery[]> {
  const out = new Map<string, PendingDelivery[]>();
  for (const p of deliveries) {
    const id = deadLetterId(p);
    out.set(id, [...(out.get(id) ?? []), p]);
  }
  return out;
}

/** The dead letters as a table, pending first, with the failure destinations each still waits for. */
export function renderDeadLetters(stream: string, letters: DeadLetter[], undelivered: readonly PendingDelivery[] = []): string {
  if (!letters.length) return `stream ${stream}: no dead letters`;
  const pending = letters.filter((d) => d.redrivenAtMs === undefined).length;
  const rows = [...letters].sort((a, b) => Number(a.redrivenAtMs !== undefined) - Number(b.redrivenAtMs !== undefined));
  const owed = undeliveredById(undelivered);
  const failing = undelivered.filter((p) => p.lastError !== undefined);
  return [
    `stream ${stream}: ${letters.length} dead letter(s), ${pending} pending` +
      (undelivered.length ? `; ${undelivered.length} delivery(ies) to failure destinations pending` : ''),
    ...(failing.length ? [`last delivery error: ${failing[failing.length - 1]?.lastError}`] : []),
    '',
    table(
      ['id', 'created', 'expires', 'kept', 'attempts', 'bytes', 'redriven', 'undelivered', 'error'],
      rows.map((d) => [
        deadLetterId(d),
        isoTime(d.createdAtMs),
        d.expiresAtMs === undefined ? 'never' : isoTime(d.expiresAtMs),
        // Only coordinates: a re-drive needs Kafka to still hold the record.
        d.kept === 'coordinates' ? 'coordinates only' : 'record',
        d.attempts,
        d.valueBytes,
        isoTime(d.redrivenAtMs),
        // Destinations still owed it, with their failed attempts: `sqs(2)`.
        (owed.get(deadLetterId(d)) ?? []).map((p) => `${p.destination}(${p.attempts})`).join(' '),
        d.error.length > 100 ? `${d.error.slice(0, 97)}...` : d.error,
      ]),
    ),
  ].join('\n');
}

/** Re-drive outcomes as text. */
export function renderRedrive(results: RedriveResult[]): string {
  if (!results.length) return 'nothing to re-drive';
  return table(
    ['id', 'outcome', 'source', 'error'],
    results.map((r) => [r.id, r.outcome, r.source, r.error]),
  );
}
