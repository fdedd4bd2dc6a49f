/** Spark's PIDRateEstimator behaviour, scenarios mirrored from PIDRateEstimatorSuite. */
import fc from 'fast-check';
import { ValidationError } from '../../../lib/errors';
import { DEFAULT_PID_PARAMS, computePidRate, initialPidState, type PidParams, type PidState } from '../../../lib/offsets';

/** [timeMs, elements, processingDelayMs, schedulingDelayMs], the argument order of Spark's compute(). */
type Obs = [number, number, number, number];

/** Spark's createDefaultEstimator(): batch 20 ms, kp 1, ki 0, kd 0, min rate 10. */
const SUITE_DEFAULT: PidParams = { batchIntervalMs: 20, proportional: 1, integral: 0, derivative: 0, minRatePerSec: 10 };

/** Runs observations through a fresh estimator created just before time 0 (Spark's latestTime = -1). */
function run(params: PidParams, observations: Obs[], start: PidState = initialPidState(-1)): Array<number | undefined> {
  let state = start;
  return observations.map(([timeMs, elements, processingDelayMs, schedulingDelayMs]) => {
    const out = computePidRate(state, params, { timeMs, elements, processingDelayMs, schedulingDelayMs });
    state = out.state;
    return out.ratePerSec;
  });
}

/** Every 20 ms for 50 batches, as the suite's tabulated scenarios. */
function series(elements: (i: number) => number, processingDelayMs: number, schedulingDelayMs: number): Obs[] {
  return Array.from({ length: 50 }, (_, i): Obs => [i * 20, elements(i), processingDelayMs, schedulingDelayMs]);
}

describe('computePidRate', () => {
  it.each<{ name: string; observations: Obs[]; expected: Array<number | undefined> }>([
    { name: 'first run yields no estimate', observations: [[0, 10, 10, 0]], expected: [undefined] },
    {
      name: 'second run estimates 10 records / 10 ms = 1000/s',
      observations: [
        [0, 10, 10, 0],
        [10, 10, 10, 0],
      ],
      expected: [undefined, 1000],
    },
    {
      name: 'no estimate when the time did not advance (10 then 10)',
      observations: [
        [0, 10, 10, 0],
        [10, 10, 10, 0],
        [10, 10, 10, 0],
      ],
      expected: [undefined, 1000, undefined],
    },
    {
      name: 'no estimate when elements = 0 or -10',
      observations: [
        [0, 10, 10, 0],
        [10, 0, 10, 0],
        [20, -10, 10, 0],
      ],
      expected: [undefined, undefined, undefined],
    },
    {
      name: 'no estimate when processing delay = 0 or -10 ms',
      observations: [
        [0, 10, 10, 0],
        [10, 10, 0, 0],
        [20, 10, -10, 0],
      ],
      expected: [undefined, undefined, undefined],
    },
  ])('$name', ({ observations, expected }) => {
    expect(run(SUITE_DEFAULT, observations)).toEqual(expected);
  });

  it('ignores an observation without changing the state (a re-delivered report counts once)', () => {
    const seeded = computePidRate(initialPidState(-1), SUITE_DEFAULT, {
      timeMs: 0,
      elements: 10,
      processingDelayMs: 10,
      schedulingDelayMs: 0,
    }).state;
    const stale = computePidRate(seeded, SUITE_DEFAULT, { timeMs: 0, elements: 999, processingDelayMs: 1, schedulingDelayMs: 0 });
    expect(stale).toEqual({ state: seeded });
    expect(stale.state).toBe(seeded);
  });

  it('accepts only observations after the creation time', () => {
    const created = initialPidState(1_000);
    expect(computePidRate(created, SUITE_DEFAULT, { timeMs: 1_000, elements: 10, processingDelayMs: 10, schedulingDelayMs: 0 }).state).toBe(
      created,
    );
    expect(
      computePidRate(created, SUITE_DEFAULT, { timeMs: 1_001, elements: 10, processingDelayMs: 10, schedulingDelayMs: 0 }).state.firstRun,
    ).toBe(false);
  });

  it('estimate never below minRate 5/s: 1 record in 20 ms with 100 ms scheduling delay (kp 1, ki 1)', () => {
    const params: PidParams = { batchIntervalMs: 20, proportional: 1, integral: 1, derivative: 0, minRatePerSec: 5 };
    const rates = run(
      params,
      series(() => 1, 20, 100),
    );
    expect(rates[0]).toBeUndefined();
    expect(rates.slice(1)).toEqual(Array.from({ length: 49 }, () => 5));
  });

  it('follows an increasing processing speed (20, 40, ... records per 20 ms -> 2000, 3000, ... /s) with no scheduling delay', () => {
    const params: PidParams = { batchIntervalMs: 20, proportional: 1, integral: 1, derivative: 0, minRatePerSec: 10 };
    const rates = run(
      params,
      series((i) => (i + 1) * 20, 20, 0),
    );
    expect(rates[0]).toBeUndefined();
    expect(rates.slice(1)).toEqual(Array.from({ length: 49 }, (_, i) => (i + 2) * 1000));
  });

  it('follows a decreasing processing speed (1000, 980, ... records per 20 ms -> 49000, 48000, ... /s)', () => {
    const params: PidParams = { batchIntervalMs: 20, proportional: 1, integral: 1, derivative: 0, minRatePerSec: 10 };
    const rates = run(
      params,
      series((i) => (50 - i) * 20, 20, 0),
    );
    expect(rates[0]).toBeUndefined();
    expect(rates.slice(1)).toEqual(Array.from({ length: 49 }, (_, i) => (49 - i) * 1000));
  });

  it('constant processing rate 500/s with Spark defaults (kp 1, ki 0.2) converges at once and holds', () => {
    const params: PidParams = { ...DEFAULT_PID_PARAMS, batchIntervalMs: 1000 };
    const rates = run(
      params,
      Array.from({ length: 10 }, (_, i): Obs => [(i + 1) * 1000, 250, 500, 0]),
    );
    expect(rates).toEqual([undefined, ...Array.from({ length: 9 }, () => 500)]);
  });

  it('scheduling delay 500 ms at 1000/s and a 1 s interval pulls 1000 down by 0.2 x 500 = 100 -> 900', () => {
    const params: PidParams = { ...DEFAULT_PID_PARAMS, batchIntervalMs: 1000 };
    expect(
      run(params, [
        [1000, 1000, 1000, 0],
        [2000, 1000, 1000, 500],
      ]),
    ).toEqual([undefined, 900]);
  });

  it('derivative term: kd 1, error 0 -> 200 over 2 s gives dError 100 and pulls the rate down by it', () => {
    // After the first run: latestRate = 1000, latestError = 0. Second: processing 800/s, error 200.
    // newRate = 1000 - 1 x 200 - 0 - 1 x (200 - 0) / 2 = 700.
    const params: PidParams = { batchIntervalMs: 1000, proportional: 1, integral: 0, derivative: 1, minRatePerSec: 1 };
    expect(
      run(params, [
        [1000, 1000, 1000, 0],
        [3000, 800, 1000, 0],
      ]),
    ).toEqual([undefined, 700]);
  });

  it.each<[string, Partial<PidParams>]>([
    ['batchIntervalMs 0', { batchIntervalMs: 0 }],
    ['proportional -1', { proportional: -1 }],
    ['integral -1', { integral: -1 }],
    ['derivative -1', { derivative: -1 }],
    ['minRatePerSec 0', { minRatePerSec: 0 }],
    ['minRatePerSec -10', { minRatePerSec: -10 }],
  ])('rejects %s (Spark "estimator checks ranges")', (_name, override) => {
    const obs = { timeMs: 0, elements: 1, processingDelayMs: 1, schedulingDelayMs: 0 };
    expect(() => computePidRate(initialPidState(-1), { ...SUITE_DEFAULT, ...override }, obs)).toThrow(ValidationError);
  });

  it('with some accumulated error (kp 1, ki 0.01) stays below the processing speed', () => {
    const arbBatch = fc.record({ elements: fc.integer({ min: 1, max: 999 }), schedulingDelayMs: fc.integer({ min: 0, max: 18 }) });
    fc.assert(
      fc.property(fc.array(arbBatch, { minLength: 2, maxLength: 50 }), (batches) => {
        const params: PidParams = { batchIntervalMs: 20, proportional: 1, integral: 0.01, derivative: 0, minRatePerSec: 10 };
        const rates = run(
          params,
          batches.map((b, i): Obs => [i * 20, b.elements, 20, b.schedulingDelayMs]),
        );
        expect(rates[0]).toBeUndefined();
        batches.forEach((b, i) => {
          if (i === 0) return;
          const rate = rates[i];
          expect(rate).toBeDefined();
          if (b.schedulingDelayMs > 0) expect(rate).toBeLessThan((b.elements / 20) * 1000);
        });
      }),
    );
  });

  it('never estimates below minRate, whatever the gains and observations', () => {
    const arbParams = fc.record({
      batchIntervalMs: fc.integer({ min: 1, max: 60_000 }),
      proportional: fc.double({ min: 0, max: 3, noNaN: true }),
      integral: fc.double({ min: 0, max: 3, noNaN: true }),
      derivative: fc.double({ min: 0, max: 3, noNaN: true }),
      minRatePerSec: fc.double({ min: 0.001, max: 10_000, noNaN: true }),
    });
    const arbObs = fc.tuple(
      fc.integer({ min: -100, max: 10_000 }),
      fc.integer({ min: -5, max: 100_000 }),
      fc.integer({ min: -5, max: 60_000 }),
      fc.integer({ min: 0, max: 600_000 }),
    );
    fc.assert(
      fc.property(arbParams, fc.array(arbObs, { maxLength: 40 }), (params, steps) => {
        let timeMs = 0;
        const observations = steps.map(([dt, elements, proc, sched]): Obs => [(timeMs += dt), elements, proc, sched]);
        for (const rate of run(params, observations)) {
          if (rate !== undefined) expect(rate).toBeGreaterThanOrEqual(params.minRatePerSec);
        }
      }),
    );
  });
});
