/** `plan --dry-run`: what the next planner run would do, computed by the planner itself with writes off. */
import type { StreamConfig } from '../config/schema';
import { KafkaError } from '../errors';
import { kafkaFailureText } from '../kafka/errors';
import { planStream, type StreamPlanReport } from '../planner/run';
import type { UnavailablePartition } from '../ports/kafka-metadata';
import type { OpsContext } from './context';
import { table } from './format';
import { partitionCount, unavailableText } from './unavailable';

/** Runs the planner in dry-run mode (no lease, no writes, no dispatch) for each stream. */
export async function dryRunPlan(ctx: OpsContext, streams: StreamConfig[], nowMs: number): Promise<StreamPlanReport[]> {
  const deps = {
    ledger: ctx.ledger,
    metadataFor: (s: StreamConfig) => ctx.metadata.forStream(s),
    dispatcher: { dispatch: async () => [] },
    plannerLeaseMs: 60_000,
  };
  return Promise.all(
    streams.map((s) =>
      planStream(deps, s, { dryRun: true, nowMs }).catch((err: unknown) => {
        // Name the setting to check: which stream's broker list could not be reached.
        if (err instanceof KafkaError && err.type === 'CONNECTION') {
          throw new KafkaError(kafkaFailureText(err, s.id), { cause: err, type: err.type, retriable: err.retriable });
        }
        throw err;
      }),
    ),
  );
}

/** The partitions whose offsets the run could not read (leader dead or moving), with their reasons. */
function unavailableOf(rep: StreamPlanReport): UnavailablePartition[] {
  return rep.partitions.flatMap((p) =>
    p.unavailable ? [{ topic: p.topic, partition: p.partition, code: p.unavailable, reason: p.unavailableReason ?? p.unavailable }] : [],
  );
}

/**
 * The run could read no partition's offsets though it asked for some (every leader unreachable):
 * the report says nothing about lag, the `plan` command exits 1. Some unavailable is a partial report.
 */
export function nothingRead(rep: StreamPlanReport): boolean {
  return rep.unavailablePartitions > 0 && rep.partitions.every((p) => p.latest === undefined);
}

/** One line about the partitions whose offsets could not be read, for stderr (none: undefined). */
export function unavailableLine(rep: StreamPlanReport): string | undefined {
  const list = unavailableOf(rep);
  if (!list.length) return undefined;
  const what = nothingRead(rep)
    ? `no offsets could be read (${partitionCount(list.length)})`
    : `offsets of ${partitionCount(list.length)} unavailable`;
  return `Kafka: ${what} for stream ${rep.stream}, nothing planned for them: ${unavailableText(list)}`;
}

/** The dry-run report as text: one row per partition, what it would get and why. */
export function renderPlan(rep: StreamPlanReport): string {
  const unavailable = rep.unavailablePartitions ? `, unavailable ${rep.unavailablePartitions}` : '';
  const planned = rep.finished ? 'finished (bounded)' : `would plan ${rep.rangesPlanned} range(s), ${rep.recordsPlanned} records`;
  const lines = [
    `stream ${rep.stream}: ${planned}; ` +
      `re-dispatch ${rep.redispatched}, park ${rep.parked}, register ${rep.registered}, retire ${rep.retired}, ` +
      `in flight ${rep.inFlight}${unavailable}${rep.reason ? ` (${rep.reason})` : ''}`,
    '',
    table(
      ['topic', 'partition', 'status', 'committed', 'next from', 'latest', 'lag', 'action', 'ranges'],
      rep.partitions.map((p) => [
        p.topic,
        p.partition,
        p.status,
        p.committed,
        p.nextFrom,
        // The planner reports lag 0 where it has no offsets: unknown, here.
        p.unavailable ? 'unavailable' : p.latest,
        p.unavailable ? undefined : p.lag,
        p.action,
        p.planned.map((r) => `[${r.from}, ${r.until})`).join(' ') || '-',
      ]),
    ),
  ];
  for (const w of rep.warnings) lines.push(`warning: ${w}`);
  for (const p of rep.partitions) if (p.note) lines.push(`  ${p.topic}/${p.partition}: ${p.note}`);
  for (const l of rep.dataLoss) lines.push(`  data loss ${l.topic}/${l.partition} [${l.from}, ${l.until}): ${l.reason}`);
  return lines.join('\n');
}
