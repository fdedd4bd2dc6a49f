/**
 * What happens to each fetched record before the handler sees it (docs/configuration.md, "Before the
 * handler"): a list of stages, in order record age, schema decoding, filters. Each stage judges the
 * records the stages before it passed: pass one on (possibly carrying more, such as its decoded
 * value), skip it (counted; its offset is committed like any other), or reject it (dead-lettered with
 * the reason, as a record the handler rejects is).
 *
 * A stage throws only for a fault outside the record (a registry that does not answer): the attempt
 * then fails and is retried, and nothing is skipped or dead-lettered because of it. Verdicts must be
 * the same every time a range is read: a folded batch may be replayed after a crash and must fold
 * exactly the records it folded before.
 */
import type { HandlerRecord } from './handler-api';

/** Why a record was skipped: a filter did not match it, or it was older than `maxRecordAgeMs`. */
export const SKIP_REASONS = ['filtered', 'expired'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

/** What a stage decided for one record. */
export type GateVerdict =
  | { kind: 'pass'; record: HandlerRecord }
  | { kind: 'skip'; reason: SkipReason }
  /** `cause` is the dead letter's cause; `error` its one-line reason (e.g. "unknown schema id 42 (confluent registry ...)"). */
  | { kind: 'reject'; cause: GateRejectCause; error: string };

/** Why a stage dead-letters a record (the dead letter's `cause`). */
export type GateRejectCause = 'undecodable' | 'expired';

/** One step before the handler. */
export type RecordStage = {
  /** Named in logs and errors. */
  name: string;
  /** Called once per chunk before `judge`, with the records still passing: fetch what they need (schemas by id). */
  prepare?(records: readonly HandlerRecord[]): Promise<void>;
  /** Decides one record; synchronous, so a chunk is judged in one pass once prepared. */
  judge(record: HandlerRecord): GateVerdict;
};

/** Judges a chunk through every stage in order; a record leaves at the first stage that skips or rejects it. */
export async function judgeChunk(stages: readonly RecordStage[], records: readonly HandlerRecord[]): Promise<GateVerdict[]> {
  let verdicts: GateVerdict[] = records.map((record) => ({ kind: 'pass', record }));
  for (const stage of stages) {
    const passing = verdicts.flatMap((v) => (v.kind === 'pass' ? [v.record] : []));
    if (passing.length === 0) break;
    await stage.prepare?.(passing);
    verdicts = verdicts.map((v) => (v.kind === 'pass' ? stage.judge(v.record) : v));
  }
  return verdicts;
}

/** Counts of records the stages skipped, by reason. */
export type SkipCounts = Record<SkipReason, number>;

/** No records skipped yet. */
export function noSkips(): SkipCounts {
  return { filtered: 0, expired: 0 };
}
