import { busyProcessors, partitionCaughtUp } from '../../../lib/local/caught-up';
import { OPEN_UNTIL } from '../../../lib/ranges';

describe('partitionCaughtUp', () => {
  it.each([
    ['committed at latest, cursor there too', { committed: 50, nextFrom: 50 }, 50, true],
    ['committed at latest, a segment reading on (cursor open)', { committed: 50, nextFrom: OPEN_UNTIL }, 50, true],
    ['a segment behind latest', { committed: 40, nextFrom: OPEN_UNTIL }, 50, false],
    ['a micro-batch range in flight', { committed: 40, nextFrom: 50 }, 50, false],
    ['planned past latest (cannot be caught up)', { committed: 50, nextFrom: 60 }, 50, false],
    ['not registered yet', undefined, 0, false],
  ] as const)('%s', (_, p, latest, expected) => {
    expect(partitionCaughtUp(p, latest)).toBe(expected);
  });
});

describe('busyProcessors', () => {
  it("leaves out continuous segments' invocations, keeps every other", () => {
    const running = [
      { topic: 't', partition: 0, from: 0, until: OPEN_UNTIL },
      { topic: 't', partition: 1, from: 0, until: 10 },
    ];
    expect(busyProcessors(running)).toEqual([running[1]]);
  });
});
