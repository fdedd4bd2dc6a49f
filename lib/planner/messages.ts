/**
 * Planner messages: the reasons a run records on partitions and ranges, and the errors it raises, as
 * small functions of their values. Operators, alarms and tests match on this wording, so it lives in
 * one place.
 */

/** A newer planner run took the stream's lease from this one (FencedOutError). */
export function fencedOutMessage(stream: string, epoch: number): string {
  return `planner epoch ${epoch} of stream ${stream} was fenced out by a newer run; it stopped without further writes`;
}

/** A partition's latest offset went below what was planned although its topic id is the same: the log was truncated. */
export function offsetRegressionReason(latest: number, nextFrom: number): string {
  return (
    `OFFSET_REGRESSION: latest offset ${latest} is below planned offset ${nextFrom} with the same topic id ` +
    '(the log was truncated, e.g. by an unclean leader election); rewind the stream to continue'
  );
}

/** Retention deleted offsets `span` ("[from, until)") before they were processed, and the stream fails on data loss. */
export function dataLossReason(span: string): string {
  return `DATA_LOSS: offsets ${span} were deleted by retention before they were processed (failOnDataLoss=true)`;
}

/** A partition waits for a free range slot; `capSource` says which limit set the cap. */
export function waitingForConcurrencyNote(open: number, cap: number, capSource: string): string {
  return `${open} of ${cap} ranges open (${capSource}): planned when a range finishes`;
}

/** A range failed every attempt the stream allows and is parked. */
export function attemptsExhaustedError(attempts: number, maxAttempts: number, lastError: string | undefined): string {
  return `gave up after ${attempts} attempts (maxAttempts ${maxAttempts}): ${lastError ?? 'lease expired'}`;
}

/** Without topic ids to compare (`how` says why), a re-creation seen only because the latest offset went below the plan. */
export function regressionRecreationReason(latest: number, nextFrom: number, how: string): string {
  return `latest offset ${latest} is below planned offset ${nextFrom} (${how}: detected by offset regression)`;
}

/** Another invocation holds the planner loop and a third already waits to take it over. */
export function loopHeldWithSuccessorReason(heldUntil: string): string {
  return `another invocation holds the loop until ${heldUntil} and another waits to take it over`;
}

/** The loop's holder did not hand it over while this invocation could wait. */
export function handoverTimedOutReason(heldUntil: string): string {
  return `the holder did not hand over before this invocation's time ran out (held until ${heldUntil})`;
}

/** An ad hoc planner payload failed validation (`issues`: "path: message" joined by "; "). */
export function invalidPlannerPayloadMessage(issues: string): string {
  return `invalid planner payload: ${issues} (accepted: {"dryRun"?: boolean, "streams"?: string[], "loop"?: boolean})`;
}

/** An ad hoc planner payload names streams the config does not have. */
export function unknownPlannerStreamsMessage(unknown: readonly string[], configured: readonly string[]): string {
  const streams = `stream${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}`;
  return `invalid planner payload: unknown ${streams} (configured: ${configured.join(', ')})`;
}

/** Where a partition present when the stream started, not registered yet, will start: whichever `startingOffsets` variant. */
export const WILL_START_AT_STARTING_OFFSETS = 'present when the stream started, it will start at startingOffsets';

/** Where a partition of a topic that appeared after the stream started, not registered yet, will start: whichever `newTopics` variant. */
export const WILL_START_AT_NEW_TOPICS = 'a topic that appeared after the stream started, it will start at newTopics';

/** The committed offsets of `startingOffsets.fromGroup` could not be read (`cause`: why); one line. */
export function groupOffsetsUnreadableMessage(group: string, cause: unknown): string {
  const why = (cause instanceof Error ? cause.message : String(cause)).replace(/\s*\n\s*/g, ' ');
  return `startingOffsets.fromGroup: the committed offsets of consumer group ${JSON.stringify(group)} could not be read: ${why}`;
}

/** Partitions added after the start wait for their group's offsets, which could not be read this run. */
export function groupOffsetsWaitingWarning(group: string, partitions: number, message: string): string {
  const what = `${partitions} new partition(s) wait for the committed offsets of group ${JSON.stringify(group)}`;
  return `${what}, read again next run (${message})`;
}
