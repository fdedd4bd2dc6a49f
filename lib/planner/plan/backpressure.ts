/** Backpressure: the rate a partition's next range is clamped to, from how its last ranges went. */
import type { StreamConfig } from '../../config/schema';
import { computePidRate, initialPidState } from '../../offsets';
import type { PartitionState } from '../../ports/ledger-state';

/** Spark's PID estimator, per partition: each partition is its own pipeline of ranges here. */
export function backpressure(
  stream: StreamConfig,
  p: PartitionState,
  nowMs: number,
): { ratePerSec?: number; pid: NonNullable<PartitionState['pid']> } | undefined {
  const bp = stream.backpressure;
  if (!bp.enabled) return undefined;
  let pid = p.pid ?? initialPidState(nowMs);
  let ratePerSec = p.backpressureRatePerSec ?? bp.initialRatePerSec;
  const last = p.lastRange;
  if (last && last.finishedAtMs > pid.latestTimeMs) {
    const res = computePidRate(
      pid,
      { ...bp, batchIntervalMs: stream.triggerIntervalMs },
      {
        timeMs: last.finishedAtMs,
        elements: last.records,
        processingDelayMs: last.processingMs,
        schedulingDelayMs: last.schedulingDelayMs,
      },
    );
    pid = res.state;
    if (res.ratePerSec !== undefined) ratePerSec = res.ratePerSec;
  }
  return { ratePerSec, pid };
}
