/**
 * When a local run has processed everything Kafka holds, in one place (the demo's and a config run's
 * `--until-caught-up`): every partition committed at its latest offset, with nothing left in flight
 * but a continuous stream's resident segments (their open ranges are always in flight, reading on).
 */
import { isOpenRange, OPEN_UNTIL } from '../ranges';

/** A partition committed at `latest`, its planning cursor there too or held open by its segment. */
export function partitionCaughtUp(p: { committed?: number; nextFrom?: number } | undefined, latest: number): boolean {
  return p !== undefined && p.committed === latest && (p.nextFrom === latest || p.nextFrom === OPEN_UNTIL);
}

/** The processors that keep a run from being caught up: any but a continuous segment's. */
export function busyProcessors<R extends { until: number }>(running: readonly R[]): R[] {
  return running.filter((r) => !isOpenRange(r));
}
