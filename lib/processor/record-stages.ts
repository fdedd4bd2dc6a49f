/** The stages a stream's records pass before its handler, built from its config (see record-gate.ts for the contract). */
import type { StreamConfig } from '../config/schema';
import { processSchemaRegistries, type SchemaRegistries } from '../schemas/registries';
import { createDecodeStage } from './decode-stage';
import { createExpiryStage } from './expiry-stage';
import { createFilterStage } from './filter-stage';
import type { RecordStage } from './record-gate';

/** What the stages of one range attempt depend on beyond the config. */
export type StageContext = {
  /** When the range was first leased (store clock): the reference for record age. */
  firstLeasedAtMs: number;
  /** Where `value` / `key` schemas are fetched (default: the process's registries, kept for its life). */
  registries?: SchemaRegistries;
};

/** The stream's stages in order: record age, then decoding, then filters (filters see decoded values). */
export async function recordStagesFor(stream: StreamConfig, at: StageContext): Promise<RecordStage[]> {
  const stages: RecordStage[] = [];
  if (stream.maxRecordAgeMs !== undefined) {
    stages.push(createExpiryStage({ maxRecordAgeMs: stream.maxRecordAgeMs, expiredRecords: stream.expiredRecords }, at.firstLeasedAtMs));
  }
  const decode = createDecodeStage({ stream: stream.id, value: stream.value, key: stream.key }, at.registries ?? processSchemaRegistries());
  if (decode) stages.push(decode);
  // Last: filters see what the stages before passed, decoded. (A dead-letter re-drive only decodes: lib/ops/dead-letters.ts.)
  if (stream.filters !== undefined && stream.filters.length > 0) stages.push(createFilterStage(stream.filters));
  return stages;
}
