/** Reads records without committing anything (processor `peek` payload, CLI `peek`). */
import type { StreamConfig } from '../config/schema';
import { describeSubscription, topicMatcher } from '../config/topics';
import { ValidationError } from '../errors';
import type { IsolationLevel } from '../ports/kafka-metadata';
import type { KafkaRecord, RangeReader, TimestampType } from '../ports/range-reader';
import { peekTopicRefusedMessage } from './messages';

/** How a peeked byte string is written: UTF-8 text only when that round-trips exactly, else base64; null for null. */
export type ByteEncoding = 'utf8' | 'base64';

export type PeekedHeader = { key: string; value: string | null; valueEncoding: ByteEncoding | null };

/** A record as lossless JSON: every byte string with its encoding, null kept, headers in write order. */
export type PeekedRecord = {
  offset: number;
  timestamp: number;
  timestampType: TimestampType;
  key: string | null;
  keyEncoding: ByteEncoding | null;
  value: string | null;
  valueEncoding: ByteEncoding | null;
  headers: PeekedHeader[];
};

// fatal: invalid UTF-8 throws instead of becoming U+FFFD; ignoreBOM: a leading BOM is kept, not
// stripped. Together, text is produced only when encoding it back gives the same bytes.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** `b` as UTF-8 text when it round-trips exactly, else as base64; null stays null. */
function encodeBytes(b: Buffer | null): { text: string | null; encoding: ByteEncoding | null } {
  if (b === null) return { text: null, encoding: null };
  try {
    return { text: utf8.decode(b), encoding: 'utf8' };
  } catch {
    return { text: b.toString('base64'), encoding: 'base64' };
  }
}

/** A record as JSON-friendly text (UTF-8 where it round-trips, base64 otherwise). */
export function toPeeked(r: KafkaRecord): PeekedRecord {
  const k = encodeBytes(r.key);
  const v = encodeBytes(r.value);
  const headers = r.headers.map((h): PeekedHeader => {
    const e = encodeBytes(h.value);
    return { key: h.key, value: e.text, valueEncoding: e.encoding };
  });
  return {
    offset: r.offset,
    timestamp: r.timestampMs,
    timestampType: r.timestampType,
    key: k.text,
    keyEncoding: k.encoding,
    value: v.text,
    valueEncoding: v.encoding,
    headers,
  };
}

/**
 * Refuses a peek at a topic the stream does not consume: the stream's Kafka credentials may reach
 * other topics, and peek must not become a way to read them.
 */
export function requirePeekTopic(stream: StreamConfig, topic: string): void {
  if (!topicMatcher(stream)(topic)) {
    throw new ValidationError(peekTopicRefusedMessage(stream.id, topic, describeSubscription(stream)));
  }
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
  for await (const chunk of reader.read({
    topic: req.topic,
    partition: req.partition,
    from: req.offset,
    until,
    isolationLevel: req.isolationLevel,
    maxChunkRecords: req.count,
  })) {
    for (const r of chunk.records) {
      out.push(toPeeked(r));
      if (out.length >= req.count) return out;
    }
  }
  return out;
}
