/** `peek <topic> <partition> <offset>`: records read through the processor's own range reader, committing nothing. */
import type { DeploymentConfig, StreamConfig } from '../config/schema';
import { describeSubscription, topicMatcher } from '../config/topics';
import { AppError, ValidationError } from '../errors';
import { PartitionUnavailableError } from '../ports/kafka-metadata';
import type { UnavailablePartition } from '../ports/kafka-metadata';
import { peek, requirePeekTopic, type PeekedRecord } from '../processor/peek';
import { partitionKey } from '../ranges';
import type { OpsContext } from './context';
import { isoTime, table } from './format';
import { offsetGoneMessage } from './messages';
import { resolveStream } from './streams';

export type PeekRequest = { stream?: string; topic: string; partition: number; offset: number; count: number };
export type PeekResult = { stream: string; topic: string; partition: number; earliest: number; latest: number; records: PeekedRecord[] };

/**
 * The stream a peek reads through (its cluster, credentials and isolation level): the one named,
 * which must consume the topic, else the first stream that consumes it. A topic no stream consumes
 * is refused, even when the credentials could read it.
 */
function streamForTopic(config: DeploymentConfig, topic: string, id: string | undefined): StreamConfig {
  if (id !== undefined) {
    const stream = resolveStream(config, id);
    requirePeekTopic(stream, topic);
    return stream;
  }
  const reading = config.streams.find((s) => topicMatcher(s)(topic));
  if (reading) return reading;
  const subscriptions = config.streams.map((s) => `${s.id}: ${describeSubscription(s)}`).join('; ');
  throw new ValidationError(`no stream consumes topic ${topic} (${subscriptions}): peek reads only the streams' own topics`);
}

/** Up to `count` records from `offset`; nothing is committed anywhere. */
export async function peekRecords(ctx: OpsContext, req: PeekRequest): Promise<PeekResult> {
  const stream = streamForTopic(ctx.config, req.topic, req.stream);
  const kafka = await ctx.metadata.forStream(stream);
  // Partial look-up: a dead leader elsewhere in the cluster does not stop a peek of a live one's partition.
  const { offsets, unavailable } = await kafka.fetchAvailableOffsets(
    [{ topic: req.topic, partitions: [req.partition] }],
    stream.isolationLevel,
  );
  const [u] = unavailable;
  if (u) throw unavailableError(stream, u);
  const earliest = offsets[0]?.earliest ?? 0;
  const latest = offsets[0]?.latest ?? 0;
  if (req.offset < earliest) {
    throw new ValidationError(offsetGoneMessage(req.offset, req.topic, req.partition, earliest));
  }
  const records = await peek(await ctx.readerFor(stream), { ...req, latest, isolationLevel: stream.isolationLevel });
  return { stream: stream.id, topic: req.topic, partition: req.partition, earliest, latest, records };
}

/** The partition cannot be read now: gone (bad input, exit 2), or its leader dead or moving (retry later). */
function unavailableError(stream: StreamConfig, u: UnavailablePartition): AppError {
  const what = `partition ${partitionKey(u.topic, u.partition)}`;
  if (u.code === 'UNKNOWN_PARTITION') return new ValidationError(`Kafka has no ${what} (stream ${stream.id}): ${u.reason}`);
  const hint = u.code === 'ERROR' ? '' : '; retry once Kafka has elected a new leader';
  const reason = u.reason.replace(/\s+/g, ' ');
  return new PartitionUnavailableError(`Kafka: ${what} unavailable (stream ${stream.id}): ${u.code}: ${reason}${hint}`, {
    topic: u.topic,
    partition: u.partition,
    code: u.code,
  });
}

/**
 * One JSON object per record and line, lossless: offset, timestamp and its type, key and value
 * each with its encoding (`utf8` or `base64`; null stays null with a null encoding), headers as an
 * ordered array of `{key, value, valueEncoding}`.
 */
export function peekJsonLines(res: PeekResult): string[] {
  return res.records.map((r) =>
    JSON.stringify({
      offset: r.offset,
      timestamp: r.timestamp,
      timestampType: r.timestampType,
      key: r.key,
      keyEncoding: r.keyEncoding,
      value: r.value,
      valueEncoding: r.valueEncoding,
      headers: r.headers,
    }),
  );
}

/** The records as a table (values cut at 80 characters; headers as `name=value`, base64 values marked). */
export function renderPeek(res: PeekResult): string {
  const cut = (s: string | null, enc: string | null) =>
    s === null ? 'null' : `${enc === 'base64' ? 'base64:' : ''}${s.length > 80 ? `${s.slice(0, 77)}...` : s}`;
  const headersText = (r: PeekedRecord) =>
    r.headers.length ? r.headers.map((h) => `${h.key}=${cut(h.value, h.valueEncoding)}`).join(', ') : '-';
  const head =
    `${res.topic}/${res.partition}: offsets [${res.earliest}, ${res.latest}), ` +
    `${res.records.length} record(s) shown (nothing committed)`;
  if (!res.records.length) return `${head}\n(no records at or after this offset)`;
  return `${head}\n\n${table(
    ['offset', 'timestamp', 'key', 'value', 'headers'],
    res.records.map((r) => [r.offset, isoTime(r.timestamp), cut(r.key, r.keyEncoding), cut(r.value, r.valueEncoding), headersText(r)]),
  )}`;
}
