/** `status [stream]`: per-partition progress from the ledger against the latest offsets in Kafka. */
import type { StreamConfig } from '../config/schema';
import { topicSelector, unmatchedSubscription } from '../config/topics';
import { kafkaFailureText } from '../kafka/errors';
import type { PartitionOffsets, TopicPartitions, UnavailableCode, UnavailablePartition } from '../ports/kafka-metadata';
import type { ClosedIncarnation, DataLossEntry, OperatorChange, PartitionState, RangeState, RangeStatus } from '../ports/ledger-state';
import { incarnationOf } from '../ports/ledger-rules/incarnation';
import { isOpenRange, partitionKey } from '../ranges';
import type { OpsContext } from './context';
import { duration, isoTime, table } from './format';
import { doneCell, inFlightProgress, renderInFlight, renderWriting, type InFlightProgress } from './in-flight';
import { loopStatus, renderLoop, type LoopStatus } from './loop-status';
import type { TickChainState } from '../ports/planner-loop';
import { noOffsetsReadMessage } from './messages';
import { partitionCount, unavailableText } from './unavailable';

/** One recorded data-loss span of a partition, as `status --json` lists it: what retention deleted unread. */
export type DataLossSpan = Pick<DataLossEntry, 'from' | 'until' | 'detectedAtMs' | 'reason' | 'incarnation'>;

/**
 * One open range of a partition's current incarnation, as `status --json` lists it: scripts (and
 * operators) see which ranges are stuck retrying and why without reading the ledger table.
 */
export type OpenRangeRow = {
  from: number;
  until: number;
  /** planned, leased, failed (awaiting a retry) or parked (needs an operator). */
  status: RangeStatus;
  /** Leases taken so far (bounded by the stream's maxAttempts). */
  attempts: number;
  /** Next offset to process inside the range. */
  progress: number;
  lastError?: string;
  leaseExpiresAtMs?: number;
  /** A continuous segment's open range (its `until` is open-ended). */
  open?: true;
};

/**
 * A continuous partition's segment (its open range): who holds it and until when, and its last
 * commit. No holder: between two holders (a hand-over, or waiting for the planner to dispatch it).
 */
export type SegmentRow = {
  /** The holder's lease token (one per processor invocation) while leased. */
  holder?: string;
  status: RangeStatus;
  leaseExpiresAtMs?: number;
  /** When the holder last wrote (a commit or a heartbeat) and the offset committed then. */
  lastCommitAtMs?: number;
  committed: number;
  /** Where the segment range starts: the partition's offset when it went continuous (or was last rewound). */
  since: number;
};

export type PartitionStatusRow = {
  topic: string;
  partition: number;
  /** Ledger status, or `unregistered` for a partition Kafka has and the planner has not seen yet. */
  status: 'active' | 'retired' | 'failed' | 'unregistered';
  committed?: number;
  /** The planning cursor; above `committed` while ranges are in flight. */
  nextFrom?: number;
  latest?: number;
  /** Records not yet processed: latest (or the stop offset of a replay) - committed. */
  lag?: number;
  /** Kafka's offsets of this partition could not be read now (its leader dead or moving): latest and lag unknown. */
  unavailable?: { code: UnavailableCode; reason: string };
  /** Ranges planned, leased or failed-and-awaiting-retry. */
  inFlight: number;
  /** Offsets those ranges span, and how many of them are done inside them (the processors' progress). */
  inFlightOffsets: number;
  inFlightDone: number;
  /** Ranges that failed and are waiting for a retry, plus parked ranges (need an operator). */
  failures: number;
  parked: number;
  /** Dead letters not yet re-driven. */
  deadLetters: number;
  /** Offsets retention deleted before they were processed (recorded, failOnDataLoss=false). */
  dataLossRecords: number;
  /** The recorded spans behind `dataLossRecords`, oldest first. */
  dataLoss: DataLossSpan[];
  /** The open ranges behind `inFlight` and `failures` (parked ones included), by `from`. */
  openRanges: OpenRangeRow[];
  /** Continuous mode: the partition's segment. */
  segment?: SegmentRow;
  stopOffset?: number;
  reason?: string;
  lastError?: string;
  /** Progress of the earliest parked range: where a rewind resumes without re-applying anything. */
  parkedAt?: number;
};

export type StreamStatus = {
  stream: string;
  atMs: number;
  startedAtMs?: number;
  finishedAtMs?: number;
  epoch?: number;
  /** A planner run (or an operator) holds the stream's lease until then. */
  leaseHeldUntilMs?: number;
  /** When the last planner run took the lease (a loop's last tick, or an ad hoc run). */
  lastRunAtMs?: number;
  /** The planner loop of the scheduled invocations; absent while none has taken it. */
  loop?: LoopStatus;
  /** The tick chain of a stream ticked by queue messages: its last claimed tick; absent while none was. */
  tickChain?: TickChainState;
  lastChange?: OperatorChange;
  bounded: boolean;
  partitions: PartitionStatusRow[];
  totals: {
    /** The sum over the partitions whose lag is known. */
    lag: number;
    /** Partitions (not retired) left out of `lag`: their offsets could not be read (unavailable, or `kafkaError`). */
    lagUnknownPartitions: number;
    inFlight: number;
    failures: number;
    parked: number;
    deadLetters: number;
    /** Streams with `onFailure`: deliveries of dead letters to failure destinations not made yet. */
    undelivered?: number;
    dataLossRecords: number;
  };
  /** Progress inside the ranges in flight (the committed offset moves only when a whole range is done). */
  inFlightProgress: InFlightProgress;
  /**
   * Kafka could not be asked for offsets, or no partition's offsets could be read: latest and lag
   * are then unknown (and the `status` command exits 1).
   */
  kafkaError?: string;
  /** Partitions whose offsets could not be read (`unavailable` on their rows); the others have theirs. */
  unavailablePartitions: number;
  /** Closed incarnations: topics deleted and re-created under their name, and what the old one had reached. */
  recreated: ClosedIncarnation[];
  /** Listed topics Kafka does not have, or a pattern matching none (one line). */
  topicsWarning?: string;
};

/** One closed incarnation, as the status report prints it. */
function renderClosed(c: ClosedIncarnation): string {
  const id = (x?: string) => (x ? ` (topic id ${x})` : '');
  const open = c.openRanges.length ? `, ${c.openRanges.length} open range(s) removed unread` : '';
  return (
    `${c.topic}/${c.partition} re-created: incarnation ${c.incarnation}${id(c.topicId)} ` +
    `closed at ${isoTime(c.detectedAtMs)} with committed ${c.committed}, ` +
    `planned up to ${c.nextFrom}${open}; incarnation ${c.incarnation + 1}${id(c.newTopicId)} reads from ${c.newStartOffset}`
  );
}

/** Reads the stream's ledger state and Kafka's offsets; changes nothing. */
export async function streamStatus(ctx: OpsContext, stream: StreamConfig, nowMs: number): Promise<StreamStatus> {
  const { ledger } = ctx;
  const [meta, parts, open, losses, dead, recreated, undelivered] = await Promise.all([
    ledger.readMeta(stream.id),
    ledger.readPartitions(stream.id),
    ledger.readOpenRanges(stream.id),
    ledger.readDataLoss(stream.id),
    ledger.listDeadLetters(stream.id),
    ledger.readClosedIncarnations(stream.id),
    stream.onFailure ? ledger.readPendingDeliveries({ stream: stream.id }) : undefined,
  ]);
  const kafka = await kafkaOffsets(ctx, stream);
  const bounded = parts.some((p) => p.stopOffset !== undefined);
  const rows = partitionRows(parts, kafka, bounded);
  const current = countOpenWork(rows, parts, open);
  for (const l of losses) {
    const row = rows.get(partitionKey(l.topic, l.partition));
    if (row) row.dataLossRecords += l.until - l.from;
  }
  listSpans(rows, losses, current);
  for (const d of dead) {
    const row = rows.get(partitionKey(d.topic, d.partition));
    if (row && d.redrivenAtMs === undefined) row.deadLetters += 1;
  }
  const partitions = [...rows.values()].sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
  const sum = (f: (r: PartitionStatusRow) => number | undefined) => partitions.reduce((s, r) => s + (f(r) ?? 0), 0);
  return {
    stream: stream.id,
    atMs: nowMs,
    startedAtMs: meta?.startedAtMs,
    finishedAtMs: meta?.finishedAtMs,
    epoch: meta?.epoch,
    leaseHeldUntilMs: meta && meta.leaseExpiresAtMs > nowMs ? meta.leaseExpiresAtMs : undefined,
    lastRunAtMs: meta?.lastRunAtMs,
    loop: loopStatus(meta, nowMs),
    ...(meta?.tickChain ? { tickChain: meta.tickChain } : {}),
    lastChange: meta?.lastChange,
    bounded,
    partitions,
    totals: {
      lag: sum((r) => r.lag),
      lagUnknownPartitions: partitions.filter((r) => lagUnknown(r, kafka.kafkaError !== undefined)).length,
      inFlight: sum((r) => r.inFlight),
      failures: sum((r) => r.failures),
      parked: sum((r) => r.parked),
      deadLetters: sum((r) => r.deadLetters),
      ...(undelivered ? { undelivered: undelivered.length } : {}),
      dataLossRecords: sum((r) => r.dataLossRecords),
    },
    inFlightProgress: inFlightProgress(current),
    kafkaError: kafka.kafkaError,
    unavailablePartitions: kafka.unavailable.size,
    recreated,
    ...(kafka.topicsWarning ? { topicsWarning: kafka.topicsWarning } : {}),
  };
}

/** What Kafka says about the stream's topics: a failure is reported as text, not thrown. */
type KafkaView = {
  discovered: TopicPartitions[];
  offsets: Map<string, PartitionOffsets>;
  /** Partitions whose leader did not answer; the others have offsets. */
  unavailable: Map<string, UnavailablePartition>;
  kafkaError?: string;
  topicsWarning?: string;
};

/**
 * The stream's topics and their offsets in Kafka now: partial when some leaders do not answer (those
 * partitions unavailable), empty with `kafkaError` when Kafka cannot be asked or no partition answered.
 */
async function kafkaOffsets(ctx: OpsContext, stream: StreamConfig): Promise<KafkaView> {
  let discovered: TopicPartitions[] = [];
  let topicsWarning: string | undefined;
  const none = { offsets: new Map<string, PartitionOffsets>(), unavailable: new Map<string, UnavailablePartition>() };
  try {
    const kafka = await ctx.metadata.forStream(stream);
    discovered = await kafka.describeTopics(topicSelector(stream));
    topicsWarning = unmatchedSubscription(
      stream,
      discovered.map((t) => t.topic),
    )?.text;
    // Offsets of what exists in Kafka now; a ledger partition Kafka no longer has shows no latest.
    const found = discovered.length
      ? await kafka.fetchAvailableOffsets(discovered, stream.isolationLevel)
      : { offsets: [], unavailable: [] };
    const view = {
      discovered,
      offsets: new Map(found.offsets.map((o) => [partitionKey(o.topic, o.partition), o])),
      unavailable: new Map(found.unavailable.map((u) => [partitionKey(u.topic, u.partition), u])),
      topicsWarning,
    };
    if (found.offsets.length || !found.unavailable.length) return view;
    const n = partitionCount(found.unavailable.length);
    return { ...view, kafkaError: noOffsetsReadMessage(n, stream.id, unavailableText(found.unavailable)) };
  } catch (err) {
    return { discovered, ...none, kafkaError: kafkaFailureText(err, stream.id), topicsWarning };
  }
}

/** One row per ledger partition, plus (unbounded streams) the partitions the next planner run will register. */
function partitionRows(parts: PartitionState[], kafka: KafkaView, bounded: boolean): Map<string, PartitionStatusRow> {
  const rows = new Map<string, PartitionStatusRow>();
  for (const p of parts) {
    const k = partitionKey(p.topic, p.partition);
    const o = kafka.offsets.get(k);
    const end = o && (p.stopOffset === undefined ? o.latest : Math.min(o.latest, p.stopOffset));
    rows.set(k, {
      topic: p.topic,
      partition: p.partition,
      status: p.status,
      committed: p.committed,
      nextFrom: p.nextFrom,
      latest: o?.latest,
      lag: end === undefined || p.status === 'retired' ? undefined : Math.max(0, end - p.committed),
      ...unavailableMark(kafka, k),
      inFlight: 0,
      inFlightOffsets: 0,
      inFlightDone: 0,
      failures: 0,
      parked: 0,
      deadLetters: 0,
      dataLossRecords: 0,
      dataLoss: [],
      openRanges: [],
      stopOffset: p.stopOffset,
      reason: p.reason,
    });
  }
  if (bounded) return rows;
  // Partitions the next planner run will register (new topics or partitions).
  for (const t of kafka.discovered) {
    for (const partition of t.partitions) {
      const k = partitionKey(t.topic, partition);
      if (rows.has(k)) continue;
      const o = kafka.offsets.get(k);
      rows.set(k, {
        topic: t.topic,
        partition,
        status: 'unregistered',
        latest: o?.latest,
        ...unavailableMark(kafka, k),
        inFlight: 0,
        inFlightOffsets: 0,
        inFlightDone: 0,
        failures: 0,
        parked: 0,
        deadLetters: 0,
        dataLossRecords: 0,
        dataLoss: [],
        openRanges: [],
      });
    }
  }
  return rows;
}

/** The row's `unavailable` field when its leader did not answer. */
function unavailableMark(kafka: KafkaView, k: string): Pick<PartitionStatusRow, 'unavailable'> {
  const u = kafka.unavailable.get(k);
  return u ? { unavailable: { code: u.code, reason: u.reason } } : {};
}

/** A partition whose lag counts (active or failed) but whose offsets could not be read. */
function lagUnknown(r: PartitionStatusRow, noOffsets: boolean): boolean {
  return (r.status === 'active' || r.status === 'failed') && (noOffsets || r.unavailable !== undefined);
}

/**
 * Counts the current incarnation's open ranges into their rows (in flight and the progress inside,
 * failed, parked); returns those ranges.
 */
function countOpenWork(rows: Map<string, PartitionStatusRow>, parts: PartitionState[], open: RangeState[]): RangeState[] {
  const current: RangeState[] = [];
  const live = new Map(parts.map((p) => [partitionKey(p.topic, p.partition), p]));
  for (const r of open) {
    const k = partitionKey(r.topic, r.partition);
    const row = rows.get(k);
    // A closed incarnation's range is never read again (the status lists re-created partitions separately).
    if (!row || incarnationOf(r) !== incarnationOf(live.get(k) ?? {})) continue;
    current.push(r);
    if (r.status === 'parked') {
      row.parked += 1;
      row.failures += 1;
      row.parkedAt = Math.min(row.parkedAt ?? Number.MAX_SAFE_INTEGER, r.progress);
    } else if (isOpenRange(r)) {
      row.inFlight += 1;
      row.segment = segmentRow(r);
      if (r.status === 'failed') row.failures += 1;
    } else {
      row.inFlight += 1;
      row.inFlightOffsets += r.until - r.from;
      row.inFlightDone += Math.max(0, Math.min(r.until, r.progress) - r.from);
      if (r.status === 'failed') row.failures += 1;
    }
    if (r.lastError && (r.status === 'failed' || r.status === 'parked')) row.lastError = r.lastError;
  }
  return current;
}

/** A segment's row from its open range (its progress is the partition's committed offset). */
function segmentRow(r: RangeState): SegmentRow {
  return {
    ...(r.status === 'leased' && r.leaseToken !== undefined ? { holder: r.leaseToken } : {}),
    status: r.status,
    ...(r.status === 'leased' && r.leaseExpiresAtMs !== undefined ? { leaseExpiresAtMs: r.leaseExpiresAtMs } : {}),
    ...(r.lastCommitAtMs !== undefined ? { lastCommitAtMs: r.lastCommitAtMs } : {}),
    committed: r.progress,
    since: r.from,
  };
}

/** Lists each row's data-loss spans and open ranges (`current`: the current incarnation's), in offset order. */
function listSpans(rows: Map<string, PartitionStatusRow>, losses: DataLossEntry[], current: RangeState[]): void {
  for (const l of losses) {
    const row = rows.get(partitionKey(l.topic, l.partition));
    const span: DataLossSpan = { from: l.from, until: l.until, detectedAtMs: l.detectedAtMs, reason: l.reason };
    if (l.incarnation !== undefined) span.incarnation = l.incarnation;
    row?.dataLoss.push(span);
  }
  for (const r of current) {
    const range: OpenRangeRow = { from: r.from, until: r.until, status: r.status, attempts: r.attempts, progress: r.progress };
    if (r.lastError !== undefined) range.lastError = r.lastError;
    if (r.leaseExpiresAtMs !== undefined && r.status === 'leased') range.leaseExpiresAtMs = r.leaseExpiresAtMs;
    if (isOpenRange(r)) range.open = true;
    rows.get(partitionKey(r.topic, r.partition))?.openRanges.push(range);
  }
  for (const row of rows.values()) {
    row.dataLoss.sort((a, b) => (a.incarnation ?? 0) - (b.incarnation ?? 0) || a.from - b.from);
    row.openRanges.sort((a, b) => a.from - b.from);
  }
}

/** The rows whose offsets could not be read, as one line (none: undefined). */
export function unavailableRows(s: StreamStatus): string | undefined {
  const rows = s.partitions.filter((r) => r.unavailable);
  if (!rows.length) return undefined;
  const list = unavailableText(rows.map((r) => ({ topic: r.topic, partition: r.partition, ...r.unavailable! })));
  return `Kafka offsets of ${partitionCount(rows.length)} of stream ${s.stream} unavailable (latest and lag unknown): ${list}`;
}

/** Ranges writing a batch listed one per line under the totals, at most this many. */
const WRITING_LINES = 10;

/** Data-loss spans listed one per line under the totals, at most this many (all of them are in `--json`). */
const DATA_LOSS_LINES = 10;

/** The recorded data-loss spans, one line each, newest last: the span the count in the table is made of. */
function renderDataLoss(s: StreamStatus): string[] {
  const spans = s.partitions.flatMap((r) =>
    r.dataLoss.map(
      (l) =>
        `  ${r.topic}/${r.partition} data loss: [${l.from}, ${l.until}) ${l.until - l.from} records, ` +
        `detected ${isoTime(l.detectedAtMs)}${l.incarnation ? ` (incarnation ${l.incarnation})` : ''}: ${l.reason}`,
    ),
  );
  const more = spans.length > DATA_LOSS_LINES ? [`  ... and ${spans.length - DATA_LOSS_LINES} more data-loss spans (see --json)`] : [];
  return [...spans.slice(0, DATA_LOSS_LINES), ...more];
}

/** The status as a table with a header and the notes an operator acts on. */
export function renderStatus(s: StreamStatus): string {
  const lines: string[] = [];
  const state =
    s.finishedAtMs !== undefined
      ? `finished at ${isoTime(s.finishedAtMs)}`
      : s.startedAtMs !== undefined
        ? `started ${isoTime(s.startedAtMs)}`
        : 'not started (no planner run yet)';
  lines.push(
    `stream ${s.stream}${s.bounded ? ' (bounded replay)' : ''}: ${state}, planner epoch ${s.epoch ?? 0}` +
      `${s.leaseHeldUntilMs ? `, lease held for ${duration(s.leaseHeldUntilMs - s.atMs)}` : ''}`,
  );
  lines.push(...renderLoop(s.loop, s.lastRunAtMs, s.atMs, s.tickChain));
  if (s.lastChange) lines.push(`last operator change: ${s.lastChange.what} (by ${s.lastChange.by} at ${isoTime(s.lastChange.atMs)})`);
  if (s.kafkaError) lines.push(`Kafka offsets unavailable: ${s.kafkaError}`);
  const unavailable = s.kafkaError ? undefined : unavailableRows(s);
  if (unavailable) lines.push(`warning: ${unavailable}`);
  if (s.topicsWarning) lines.push(`warning: ${s.topicsWarning}`);
  lines.push('');
  const headers = [
    'topic',
    'partition',
    'status',
    'committed',
    'latest',
    'lag',
    'in flight',
    'done inside',
    'failures',
    'dead letters',
    'data loss',
  ];
  if (s.bounded) headers.splice(5, 0, 'stop');
  lines.push(
    table(
      headers,
      s.partitions.map((r) => {
        const row: Array<string | number | undefined> = [
          r.topic,
          r.partition,
          r.status,
          r.committed,
          r.unavailable ? 'unavailable' : r.latest,
          r.lag,
          r.inFlight,
          doneCell(r.inFlightDone, r.inFlightOffsets),
          r.failures,
          r.deadLetters,
          r.dataLossRecords,
        ];
        if (s.bounded) row.splice(5, 0, r.stopOffset);
        return row;
      }),
    ),
  );
  lines.push('');
  const t = s.totals;
  // Without Kafka's offsets the lag is unknown, not zero; with some of them, a lower bound.
  const partial = t.lagUnknownPartitions ? ` (partial: lag of ${partitionCount(t.lagUnknownPartitions)} unknown)` : '';
  lines.push(
    `total lag ${s.kafkaError ? 'unknown (Kafka unavailable)' : `${t.lag}${partial}`}, ranges in flight ${t.inFlight}, ` +
      `failures ${t.failures} (parked ${t.parked}), dead letters ${t.deadLetters}` +
      (t.undelivered !== undefined ? ` (deliveries to failure destinations pending ${t.undelivered})` : '') +
      `, data loss ${t.dataLossRecords} records`,
  );
  lines.push(renderInFlight(s.inFlightProgress));
  lines.push(...renderSegments(s.partitions, s.atMs));
  const writing = s.inFlightProgress.writing;
  for (const w of writing.slice(0, WRITING_LINES)) lines.push(`  ${renderWriting(w)}`);
  if (writing.length > WRITING_LINES) lines.push(`  ... and ${writing.length - WRITING_LINES} more ranges writing a batch`);
  for (const c of s.recreated) lines.push(`  ${renderClosed(c)}`);
  lines.push(...renderDataLoss(s));
  for (const r of s.partitions) {
    if (r.reason) lines.push(`  ${r.topic}/${r.partition} ${r.status}: ${r.reason}`);
    if (r.lastError) lines.push(`  ${r.topic}/${r.partition} last range error: ${r.lastError}`);
    if (r.parkedAt !== undefined) {
      lines.push(
        `  ${r.topic}/${r.partition} is stopped by a parked range at offset ${r.parkedAt}: ` +
          `once fixed, rewind ${s.stream} --topic ${r.topic} --partition ${r.partition} --to ${r.parkedAt}`,
      );
    }
  }
  return lines.join('\n');
}

/** Continuous streams: one line per partition's segment, its holder and last commit (none: no line). */
function renderSegments(rows: readonly PartitionStatusRow[], atMs: number): string[] {
  const held = rows.filter((r) => r.segment);
  if (!held.length) return [];
  const ago = (ms: number | undefined) => (ms === undefined ? 'no commit yet' : `last commit ${duration(Math.max(0, atMs - ms))} ago`);
  return [
    `segments (continuous): ${held.filter((r) => r.segment?.holder).length} of ${held.length} held`,
    ...held.map(({ topic, partition, segment: g }) => {
      const who = g!.holder
        ? `held by ${g!.holder} (lease for ${duration(Math.max(0, (g!.leaseExpiresAtMs ?? atMs) - atMs))})`
        : `no holder (${g!.status}: handing over, or waiting for the planner to dispatch it)`;
      return `  ${topic}/${partition}: ${who}, committed ${g!.committed}, ${ago(g!.lastCommitAtMs)}`;
    }),
  ];
}
