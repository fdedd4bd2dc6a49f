/** The stages a stream's records pass before its handler, built from its config (see record-gate.ts for the contract). */
import type { StreamConfig } from '../config/schema';
import { createExpiryStage } from './expiry-stage';
import { createFilterStage } from './filter-stage';
import type { RecordStage } from './record-gate';

/** What the stages of one range attempt depend on beyond the config. */
export type StageContext = {
  /** When the range was first leased (store clock): the reference for record age. */
  firstLeasedAtMs: number;
  /**
   * An operator's re-drive of dead letters: the record is decoded as the processor would, but neither
   * aged nor filtered (the operator chose it, and it may have been dead-lettered as expired).
   */
  redrive?: boolean;
};

/** The stream's stages in order: record age, then decoding, then filters (filters see decoded values). */
export async function recordStagesFor(stream: StreamConfig, at: StageContext): Promise<RecordStage[]> {
  const stages: RecordStage[] = [];
  if (stream.maxRecordAgeMs !== undefined && !at.redrive) {
    stages.push(createExpiryStage({ maxRecordAgeMs: stream.maxRecordAgeMs, expiredRecords: stream.expiredRecords }, at.firstLeasedAtMs));
  }
  // Last: filters see what the stages before passed, decoded. A re-drive is not filtered (see StageContext).
  if (stream.filters !== undefined && stream.filters.length > 0 && !at.redrive) stages.push(createFilterStage(stream.filters));
  return stages;
}
