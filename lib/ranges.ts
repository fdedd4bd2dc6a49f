/** Identity and payload of an offset range, shared by planner, ledger, dispatcher and processor. */

/** The processor's invocation payload: exactly one range `[from, until)` of one partition. */
export type RangePayload = {
  stream: string;
  topic: string;
  partition: number;
  from: number;
  until: number;
  /** The partition incarnation (absent = 0): ranges of a re-created topic are new ranges. */
  incarnation?: number;
};

/** `topic/partition`: Kafka topic names cannot contain '/', so this is unambiguous. */
export function partitionKey(topic: string, partition: number): string {
  return `${topic}/${partition}`;
}
