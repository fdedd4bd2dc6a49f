/**
 * Operator command messages: why a command was refused or failed, and what to do about it, as small
 * functions of their values. Operators and tests match on this wording, so it lives in one place.
 */

/** A dead letter Kafka no longer has and whose stored copy keeps only its coordinates. */
export function onlyCoordinatesKeptMessage(deadLetterId: string): string {
  return (
    `Kafka no longer has ${deadLetterId} and its dead letter keeps only coordinates (deadLetters.keep = "coordinates"): ` +
    'nothing to re-drive'
  );
}

/** A dead letter Kafka no longer has and whose stored copy was truncated. */
export function truncatedCopyMessage(deadLetterId: string, valueBytes: number): string {
  return `Kafka no longer has ${deadLetterId} and its stored copy is truncated (${valueBytes} bytes)`;
}

/** An operator change waited in vain for a planner run to release the stream's lease. */
export function streamBeingPlannedMessage(stream: string, holder: string, leaseExpiresAtMs: number): string {
  return (
    `stream ${stream} is being planned (lease held by ${holder} until ${new Date(leaseExpiresAtMs).toISOString()}); ` +
    'nothing was changed, try again'
  );
}

/** A peek at an offset retention already removed. */
export function offsetGoneMessage(offset: number, topic: string, partition: number, earliest: number): string {
  return `offset ${offset} of ${topic}/${partition} is gone (retention): the earliest offset is ${earliest}`;
}

/** A replay refused because some partitions' offsets cannot be read now (`partitions`: "n partitions", `reasons`: each one's). */
export function replayRefusedUnavailableMessage(source: string, partitions: string, reasons: string): string {
  return (
    `replay of ${source} refused: Kafka offsets of ${partitions} unavailable (${reasons}); ` +
    'a replay covers every partition from its creation: retry once Kafka has elected new leaders; nothing was created'
  );
}

/** A replay run locally that planned and ran nothing for several rounds. */
export function replayNoProgressMessage(stream: string): string {
  return (
    `replay ${stream} makes no progress (parked ranges? see: status ${stream}); ` +
    'it can be continued by running the same replay command again'
  );
}

/** A replay name that makes the replay stream's id invalid. */
export function invalidReplayStreamIdMessage(id: string): string {
  return (
    `replay stream id "${id}" is not a valid stream id (1-63 characters: lowercase letters, digits, '_' or '-'); ` +
    'choose a shorter --name'
  );
}

/** A rewind target that is none of the accepted forms. */
export function invalidRewindTargetMessage(text: string): string {
  return `invalid --to "${text}": use earliest, latest, an offset (whole number), or a timestamp (2024-05-01T12:00:00Z, @<epoch ms>, -2h)`;
}

/** A rewind whose --topic/--partition select no partition of the stream. */
export function noPartitionMatchesMessage(stream: string, topic: string | undefined, partition: number | undefined): string {
  const selection = `${topic ? ` topic ${topic}` : ''}${partition !== undefined ? ` partition ${partition}` : ''}`;
  return `no partition of stream ${stream} matches${selection}`;
}

/** A rewind to one offset that selects several partitions. */
export function offsetTargetNeedsOnePartitionMessage(selected: number): string {
  return `--to <offset> needs exactly one partition: add --topic and --partition (${selected} selected)`;
}

/** Why a rewind with unavailable partitions is refused, and what the operator can do. */
export const PARTIAL_RULE =
  'a rewind moves every selected partition or none: retry once Kafka has elected new leaders, ' +
  'or select only partitions whose leaders answer (--topic, --partition)';

/** A rewind refused because some partitions' offsets cannot be read now (`partitions`: "n partitions", `reasons`: each one's). */
export function rewindRefusedUnavailableMessage(stream: string, partitions: string, reasons: string): string {
  return `rewind of ${stream} refused: Kafka offsets of ${partitions} unavailable (${reasons}); ${PARTIAL_RULE}; nothing was changed`;
}

/** A rewind refused because ranges of the selected partitions are in flight (`list` names the first few). */
export function rewindRefusedBusyMessage(busy: number, list: string, more: boolean): string {
  return (
    `rewind refused: ${busy} range(s) in flight (${list}${more ? ', ...' : ''}); ` +
    'wait until they finish (status shows them) and retry; nothing was changed'
  );
}

/** A time argument (`what`: --from, --to, ...) in none of the accepted forms. */
export function invalidTimeMessage(what: string, text: string): string {
  return `invalid ${what} "${text}": use ISO 8601 (2024-05-01T12:00:00Z), @<epoch ms>, now, or -<n>ms|s|m|h|d (e.g. -2h)`;
}

/** No partition of the stream had readable offsets (`partitions`: "n partitions", `reasons`: each one's). */
export function noOffsetsReadMessage(partitions: string, stream: string, reasons: string): string {
  return `Kafka: no offsets could be read (${partitions} of stream ${stream}): ${reasons}`;
}
