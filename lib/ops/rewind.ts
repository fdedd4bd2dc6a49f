/**
 * `rewind <stream> --to earliest|latest|<timestamp>|<offset>`: moves partitions' committed offsets
 * and planning cursors, the way `kafka-consumer-groups --reset-offsets` moves a group, but as one
 * conditional ledger change: refused while ranges are in flight, fenced by the planner lease, and
 * recorded (who, when, what) on the stream.
 */
import type { StreamConfig } from '../config/schema';
import { PreconditionError, ValidationError } from '../errors';
import type { PartitionOffsets, UnavailablePartition } from '../ports/kafka-metadata';
import type { RewindPartition } from '../ports/ledger';
import type { PartitionState } from '../ports/ledger-state';
import { isOpenRange, partitionKey } from '../ranges';
import type { OpsContext } from './context';
import { isoTime, table } from './format';
import { withOperatorLease } from './lease';
import {
  invalidRewindTargetMessage,
  noPartitionMatchesMessage,
  offsetTargetNeedsOnePartitionMessage,
  PARTIAL_RULE,
  rewindRefusedBusyMessage,
  rewindRefusedUnavailableMessage,
} from './messages';
import { parseTimestamp, parseWhole } from './time';
import { groupByTopic, partitionCount, unavailableText } from './unavailable';

export type RewindTarget =
  { kind: 'earliest' } | { kind: 'latest' } | { kind: 'timestamp'; ms: number } | { kind: 'offset'; offset: number };

/** `earliest`, `latest`, a whole number (an offset), or a timestamp (see parseTimestamp). */
export function parseRewindTarget(text: string, nowMs: number): RewindTarget {
  const t = text.trim();
  if (t === 'earliest' || t === 'latest') return { kind: t };
  if (/^\d+$/.test(t)) return { kind: 'offset', offset: parseWhole(t, 'offset') };
  try {
    return { kind: 'timestamp', ms: parseTimestamp(t, nowMs) };
  } catch {
    throw new ValidationError(invalidRewindTargetMessage(text));
  }
}

function describeTarget(t: RewindTarget): string {
  if (t.kind === 'timestamp') return `timestamp ${isoTime(t.ms)}`;
  if (t.kind === 'offset') return `offset ${t.offset}`;
  return t.kind;
}

export type RewindRequest = {
  stream: StreamConfig;
  target: RewindTarget;
  topic?: string;
  partition?: number;
  dryRun: boolean;
  who: string;
  nowMs: number;
};

export type RewindRow = {
  topic: string;
  partition: number;
  status: string;
  committed: number;
  nextFrom: number;
  earliest: number;
  latest: number;
  to: number;
};

export type RewindResult = {
  stream: string;
  target: string;
  dryRun: boolean;
  partitions: RewindRow[];
  /** Partitions left alone, and why (retired). */
  skipped: Array<{ topic: string; partition: number; reason: string }>;
  /**
   * Selected partitions whose offsets could not be read now (leader dead or moving): a dry run lists
   * them; a rewind is refused while there is any, since it moves every selected partition or none.
   */
  unavailable: UnavailablePartition[];
  removedRanges?: number;
  abandonedParkedRanges?: number;
  removedDeadLetters?: number;
  change?: { by: string; atMs: number; what: string };
};

/** Computes the rewind and, unless `dryRun`, applies it under the planner lease; nothing changes on refusal. */
export async function rewindStream(ctx: OpsContext, req: RewindRequest): Promise<RewindResult> {
  const { ledger } = ctx;
  const { stream } = req;
  const all = await ledger.readPartitions(stream.id);
  if (!all.length)
    throw new ValidationError(`stream ${stream.id} has no partitions in the ledger yet (no planner run so far): nothing to rewind`);
  if (all.some((p) => p.stopOffset !== undefined))
    throw new ValidationError(`stream ${stream.id} is a bounded replay: start a new replay instead of rewinding it`);
  const selected = all.filter(
    (p) => (req.topic === undefined || p.topic === req.topic) && (req.partition === undefined || p.partition === req.partition),
  );
  if (!selected.length) {
    throw new ValidationError(noPartitionMatchesMessage(stream.id, req.topic, req.partition));
  }
  const skipped = selected
    .filter((p) => p.status === 'retired')
    .map((p) => ({ topic: p.topic, partition: p.partition, reason: p.reason ?? 'retired' }));
  const targets = selected.filter((p) => p.status !== 'retired');
  if (!targets.length) throw new ValidationError(`every selected partition of ${stream.id} is retired: nothing to rewind`);
  if (req.target.kind === 'offset' && targets.length > 1) {
    throw new ValidationError(offsetTargetNeedsOnePartitionMessage(targets.length));
  }

  const { rows, unavailable } = await targetOffsets(ctx, stream, targets, req.target);
  assertIdle(await ledger.readOpenRanges(stream.id), targets);
  const target = describeTarget(req.target);
  const result: RewindResult = { stream: stream.id, target, dryRun: req.dryRun, partitions: rows, skipped, unavailable };
  if (req.dryRun) return result;
  if (unavailable.length) {
    throw new PreconditionError(
      rewindRefusedUnavailableMessage(stream.id, partitionCount(unavailable.length), unavailableText(unavailable)),
    );
  }

  const what = `rewind to ${target}: ${rows.map((r) => `${r.topic}/${r.partition} ${r.committed}->${r.to}`).join(', ')}`.slice(0, 2000);
  const change = { by: req.who, atMs: req.nowMs, what };
  return withOperatorLease(ledger, { stream: stream.id, who: req.who, storeClock: ctx.storeClock }, async (lease) => {
    // Re-read under the lease: the cursors the change names must be the ones no planner can move now.
    const fresh = new Map((await ledger.readPartitions(stream.id)).map((p) => [partitionKey(p.topic, p.partition), p]));
    assertIdle(await ledger.readOpenRanges(stream.id), targets);
    const partitions: RewindPartition[] = rows.map((r) => {
      const p = fresh.get(partitionKey(r.topic, r.partition)) as PartitionState;
      return {
        topic: r.topic,
        partition: r.partition,
        expect: { committed: p.committed, nextFrom: p.nextFrom },
        to: r.to,
        incarnation: p.incarnation,
      };
    });
    const out = await ledger.rewindPartitions({ ...lease, partitions, change });
    if (out.outcome === 'fenced')
      throw new PreconditionError(`a planner run took over stream ${stream.id} during the rewind; nothing was changed, try again`);
    if (out.outcome === 'condition-failed')
      throw new PreconditionError(`rewind of ${stream.id} refused: ${out.reason}; nothing was changed`);
    return {
      ...result,
      removedRanges: out.removedRanges,
      abandonedParkedRanges: out.abandonedParkedRanges,
      removedDeadLetters: out.removedDeadLetters,
      change,
    };
  });
}

/**
 * Each partition's target offset, within [earliest, latest] of the partition now, for the partitions
 * whose leaders answered (partial look-ups: a dead leader costs its own partitions); the others apart.
 */
async function targetOffsets(
  ctx: OpsContext,
  stream: StreamConfig,
  parts: PartitionState[],
  target: RewindTarget,
): Promise<{ rows: RewindRow[]; unavailable: UnavailablePartition[] }> {
  const kafka = await ctx.metadata.forStream(stream);
  const ask = groupByTopic(parts);
  const [bounds, byTime] = await Promise.all([
    kafka.fetchAvailableOffsets(ask, stream.isolationLevel),
    target.kind === 'timestamp' ? kafka.fetchAvailableOffsetsForTimestamp(ask, target.ms, stream.isolationLevel) : undefined,
  ]);
  const offsets = new Map(bounds.offsets.map((o) => [partitionKey(o.topic, o.partition), o]));
  const atTime = byTime && new Map(byTime.offsets.map((o) => [partitionKey(o.topic, o.partition), o.offset]));
  const unavailable = new Map<string, UnavailablePartition>();
  for (const u of [...bounds.unavailable, ...(byTime?.unavailable ?? [])]) {
    const k = partitionKey(u.topic, u.partition);
    if (u.code === 'UNKNOWN_PARTITION') throw new ValidationError(`partition ${k} no longer exists in Kafka: nothing to rewind it to`);
    if (!unavailable.has(k)) unavailable.set(k, u);
  }
  const readable = parts.filter((p) => !unavailable.has(partitionKey(p.topic, p.partition)));
  const rows = readable.map((p) => {
    const k = partitionKey(p.topic, p.partition);
    const o = offsets.get(k) as PartitionOffsets;
    let to: number;
    if (target.kind === 'earliest') to = o.earliest;
    else if (target.kind === 'latest') to = o.latest;
    else if (target.kind === 'timestamp') to = Math.max(o.earliest, atTime?.get(k) ?? o.latest);
    else {
      if (target.offset < o.earliest || target.offset > o.latest) {
        throw new ValidationError(`offset ${target.offset} is outside ${k}'s offsets [${o.earliest}, ${o.latest}]`);
      }
      to = target.offset;
    }
    return {
      topic: p.topic,
      partition: p.partition,
      status: p.status,
      committed: p.committed,
      nextFrom: p.nextFrom,
      earliest: o.earliest,
      latest: o.latest,
      to,
    };
  });
  return { rows, unavailable: [...unavailable.values()] };
}

/** Refuses while any range of the partitions is planned, leased or failed (parked ranges are abandoned, open segment ranges ended). */
function assertIdle(
  open: Array<{ topic: string; partition: number; from: number; until: number; status: string }>,
  parts: PartitionState[],
): void {
  const keys = new Set(parts.map((p) => partitionKey(p.topic, p.partition)));
  // An open segment range (continuous mode) is never idle: the rewind removes it, which stops its holder.
  const busy = open.filter((r) => r.status !== 'parked' && !isOpenRange(r) && keys.has(partitionKey(r.topic, r.partition)));
  if (busy.length) {
    const list = busy
      .slice(0, 5)
      .map((r) => `${r.topic}/${r.partition} [${r.from}, ${r.until}) ${r.status}`)
      .join(', ');
    throw new PreconditionError(rewindRefusedBusyMessage(busy.length, list, busy.length > 5));
  }
}

/** The rewind as text: one row per partition, old and new cursor. */
export function renderRewind(r: RewindResult): string {
  const lines = [
    `${r.dryRun ? 'would rewind' : 'rewound'} stream ${r.stream} to ${r.target}` +
      `${r.change ? ` (recorded: by ${r.change.by} at ${isoTime(r.change.atMs)})` : ''}`,
    '',
    table(
      ['topic', 'partition', 'status', 'committed', 'earliest', 'latest', 'new offset'],
      r.partitions.map((p) => [p.topic, p.partition, p.status, p.committed, p.earliest, p.latest, p.to]),
    ),
  ];
  for (const s of r.skipped) lines.push(`  skipped ${s.topic}/${s.partition}: ${s.reason}`);
  if (r.unavailable.length) {
    lines.push(`  unavailable, not rewound: ${unavailableText(r.unavailable)}`);
    lines.push(`  a rewind now would be refused: ${PARTIAL_RULE}`);
  }
  if (!r.dryRun) {
    lines.push(
      `removed ${r.removedRanges ?? 0} finished range(s) and ${r.removedDeadLetters ?? 0} dead letter(s) at or after the new offsets; ` +
        `abandoned ${r.abandonedParkedRanges ?? 0} parked range(s)`,
    );
  }
  return lines.join('\n');
}
