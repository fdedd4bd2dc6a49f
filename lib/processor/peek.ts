/** Reads records without committing anything (processor `peek` payload, CLI `peek`). */
import type { IsolationLevel } from '../ports/kafka-metadata';
import type { KafkaRecord, RangeReader } from '../ports/range-reader';

export type PeekedRecord = {
  offset: number;
  timestamp: number;
  key: string | null;
  value: string | null;
  /** How `key`/`value` are encoded: UTF-8 text when valid, else base64. */
  keyEncoding: 'utf8' | 'base64';
  valueEncoding: 'utf8' | 'base64';
  headers: Record<string, string | string[]>;
};

const utf8 = new TextDecoder('utf-8', { fatal: true });

function text(b: Buffer | null): { v: string | null; enc: 'utf8' | 'base64' } {
  if (b === null) return { v: null, enc: 'utf8' };
  try {
    return { v: utf8.decode(b), enc: 'utf8' };
  } catch {
    return { v: b.toString('base64'), enc: 'base64' };
  }
}

/** A record as JSON-friendly text (UTF-8 where valid, base64 otherwise). */
export function toPeeked(r: KafkaRecord): PeekedRecord {
  const k = text(r.key);
  const v = text(r.value);
  const headers: Record<string, string | string[]> = {};
  for (const [name, val] of Object.entries(r.headers)) {
    if (val === undefined) continue;
    headers[name] = Array.isArray(val) ? val.map((x) => text(x).v ?? '') : (text(val).v ?? '');
  }
  return { offset: r.offset, timestamp: r.timestampMs, key: k.v, value: v.v, keyEncoding: k.enc, valueEncoding: v.enc, headers };
}

/** Up to `count` records from `offset` (fewer at the end of the partition); never commits. */
export async function peek(
  reader: RangeReader,
  req: { topic: string; partition: number; offset: number; count: number; latest: number; isolationLevel: IsolationLevel },
): Promise<PeekedRecord[]> {
  // The reader fetches lazily, so reading towards `latest` and stopping at `count` costs only what is read.
  const until = req.latest;
  if (until <= req.offset) return [];
  const out: PeekedRecord[] = [];
  for await (const chunk of reader.read({ topic: req.topic, partition: req.partition, from: req.offset, until, isolationLevel: req.isolationLevel, maxChunkRecords: req.count })) {
    for (const r of chunk.records) {
      out.push(toPeeked(r));
      if (out.length >= req.count) return out;
    }
  }
  return out;
}
