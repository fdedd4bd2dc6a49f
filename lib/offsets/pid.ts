/**
 * Spark Streaming's PID rate estimator (backpressure) as a pure state machine: the state is plain
 * data the planner persists between runs, and each completed batch is one observation.
 *
 * Semantics follow Spark's PIDRateEstimator: the error is the last estimate minus the measured
 * processing rate, the integral term is the backlog implied by the scheduling delay, and the
 * first valid observation only seeds the state (no estimate), because there is no previous
 * estimate to compare with yet.
 */
import { requireFinite } from './internal';

/** What the estimator remembers between observations (JSON-serialisable). */
export type PidState = {
  /** Time of the last accepted observation; older or equal observations are ignored. */
  latestTimeMs: number;
  /** The last estimate (or, after the first run, the measured processing rate). */
  latestRatePerSec: number;
  latestError: number;
  firstRun: boolean;
};

/** Controller gains and bounds; see `DEFAULT_PID_PARAMS` for Spark's defaults. */
export type PidParams = {
  proportional: number;
  integral: number;
  derivative: number;
  minRatePerSec: number;
  /** The planner trigger interval (Spark's batch duration). */
  batchIntervalMs: number;
};

/** One finished batch as the estimator sees it. */
export type PidObservation = {
  /** When the batch completed. */
  timeMs: number;
  /** Records processed in the batch. */
  elements: number;
  processingDelayMs: number;
  /** How long the batch waited before it started: a sign of accumulated backlog. */
  schedulingDelayMs: number;
};

/** Spark's defaults (spark.streaming.backpressure.pid.*), to combine with the stream's interval. */
export const DEFAULT_PID_PARAMS = Object.freeze({
  proportional: 1.0,
  integral: 0.2,
  derivative: 0.0,
  minRatePerSec: 100,
}) satisfies Omit<PidParams, 'batchIntervalMs'>;

/** A fresh estimator created at `nowMs`: only observations strictly after `nowMs` are accepted. */
export function initialPidState(nowMs: number): PidState {
  // -1 mirrors Spark's "no value yet" markers; the first accepted observation overwrites both.
  return { latestTimeMs: nowMs, latestRatePerSec: -1, latestError: -1, firstRun: true };
}

/** Throws unless the parameters are usable (Spark's constructor checks). */
function validatePidParams(params: PidParams): void {
  requireFinite('batchIntervalMs', params.batchIntervalMs, 0, true);
  requireFinite('proportional', params.proportional, 0);
  requireFinite('integral', params.integral, 0);
  requireFinite('derivative', params.derivative, 0);
  // A zero floor could stop a stream for good: with no records there is nothing left to measure.
  requireFinite('minRatePerSec', params.minRatePerSec, 0, true);
}

/** Feeds one observation; returns the next state and, from the second valid observation on, a new rate. */
export function computePidRate(state: PidState, params: PidParams, obs: PidObservation): { state: PidState; ratePerSec?: number } {
  validatePidParams(params);
  const { timeMs, elements, processingDelayMs, schedulingDelayMs } = obs;
  // An empty or instantaneous batch says nothing about throughput; a stale one (retried or
  // re-delivered report) must not be counted twice.
  if (!(timeMs > state.latestTimeMs && elements > 0 && processingDelayMs > 0)) return { state };

  const processingRatePerSec = (elements / processingDelayMs) * 1000;
  if (state.firstRun) {
    return { state: { latestTimeMs: timeMs, latestRatePerSec: processingRatePerSec, latestError: 0, firstRun: false } };
  }

  const sinceUpdateSec = (timeMs - state.latestTimeMs) / 1000;
  // The previous estimate is the rate we asked for; the measured rate is what the processors did.
  const error = state.latestRatePerSec - processingRatePerSec;
  // A scheduling delay s means about s x processingRate records overflowed earlier batches; spread
  // over one interval, that is the rate we over-asked by in the past.
  const historicalError = (schedulingDelayMs * processingRatePerSec) / params.batchIntervalMs;
  const dError = (error - state.latestError) / sinceUpdateSec;
  const newRatePerSec = Math.max(
    state.latestRatePerSec - params.proportional * error - params.integral * historicalError - params.derivative * dError,
    params.minRatePerSec,
  );
  return {
    state: { latestTimeMs: timeMs, latestRatePerSec: newRatePerSec, latestError: error, firstRun: false },
    ratePerSec: newRatePerSec,
  };
}
