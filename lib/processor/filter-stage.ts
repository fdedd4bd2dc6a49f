/**
 * `filters` (the Kafka trigger's FilterCriteria): a record that matches none of the stream's
 * patterns is skipped, counted in `filtered` (metric `RecordsFiltered`) and committed like any
 * other, so the range completes past it. Runs after decoding, so patterns see decoded values.
 */
import { compileFilters } from '../filters/match';
import type { FilterPattern } from '../filters/pattern';
import { filterDocument } from '../filters/record-document';
import type { RecordStage } from './record-gate';

/** The stage that keeps the records matching any of `patterns` (validated when the config loaded). */
export function createFilterStage(patterns: readonly FilterPattern[]): RecordStage {
  const filter = compileFilters(patterns);
  return {
    name: 'filters',
    judge(record) {
      return filter.matches(filterDocument(record, filter.fields)) ? { kind: 'pass', record } : { kind: 'skip', reason: 'filtered' };
    },
  };
}
