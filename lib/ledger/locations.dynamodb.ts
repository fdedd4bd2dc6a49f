/**
 * Which group item holds each partition of a stream (ledger layout 2), as this process last read it
 * from the `P#` items, and where new partitions go: the lowest group with room (fewer than
 * PARTITIONS_PER_GROUP entries, and the partition's entry name free there), else a new group. A
 * partition never changes group, so what was read stays true; a look-up reads what was not.
 */
import { AppError } from '../errors';
import { partitionKey } from '../ranges';
import { entryName, PARTITIONS_PER_GROUP } from './groups.dynamodb';

/** A ledger written by an earlier release (before layout 2): it must be migrated before it is used. */
export class LedgerLayoutError extends AppError {
  constructor(stream: string, options?: { cause?: unknown }) {
    super(
      'LEDGER_LAYOUT',
      `the ledger of stream ${stream} was written by an earlier release (layout 1); stop its planner and run ` +
        `\`kafka-direct migrate-ledger ${stream}\` to move it to layout 2`,
      options,
    );
  }
}

/** A stream's partitions by group, as known to this process. */
export type StreamLocations = {
  groupOf(topic: string, partition: number): number | undefined;
  /** Records where a partition is (read from its `P#` item, or just assigned). */
  record(topic: string, partition: number, group: number): void;
  /** Assigns groups to partitions not registered yet, in order, filling the lowest groups with room. */
  assign(partitions: ReadonlyArray<{ topic: string; partition: number }>): void;
};

/** Locations of one stream, starting from what is known (complete when `all` read every `P#` item). */
export function createStreamLocations(): StreamLocations {
  const groups = new Map<string, number>();
  const members = new Map<number, Set<string>>();
  const record = (topic: string, partition: number, group: number) => {
    groups.set(partitionKey(topic, partition), group);
    let m = members.get(group);
    if (!m) members.set(group, (m = new Set()));
    m.add(entryName(topic, partition));
  };
  return {
    groupOf: (topic, partition) => groups.get(partitionKey(topic, partition)),
    record,
    assign(partitions) {
      for (const { topic, partition } of partitions) {
        if (groups.has(partitionKey(topic, partition))) continue;
        const name = entryName(topic, partition);
        let g = 0;
        while ((members.get(g)?.size ?? 0) >= PARTITIONS_PER_GROUP || members.get(g)?.has(name)) g++;
        record(topic, partition, g);
      }
    },
  };
}
