/** The loop-tick check of the loop scenarios on hand-made tick logs: one loop ticks a stream at a time. */
import { loopOverlaps, type LoopTick } from './loops';

const tick = (owner: string, startedAtMs: number, endedAtMs = startedAtMs + 100, stream = 's-eo'): LoopTick => ({
  owner,
  stream,
  startedAtMs,
  endedAtMs,
});

it('accepts hand-overs: each owner ticks in one run of ticks, after the previous owner ended', () => {
  const ticks = [tick('a', 0), tick('a', 1000), tick('b', 2000), tick('b', 3000), tick('c', 4000), tick('a', 500, 600, 's-al')];
  expect(loopOverlaps(ticks)).toEqual([]);
});

it('finds an owner ticking again after another took over', () => {
  expect(loopOverlaps([tick('a', 0), tick('b', 1000), tick('a', 2000)])).toEqual(['eo: a ticked again at 2000 after b had ticked']);
});

it("finds a tick that began before the previous owner's tick ended", () => {
  expect(loopOverlaps([tick('a', 0, 1500), tick('b', 1000)])).toEqual(["eo: b's tick at 1000 began before a's ended at 1500"]);
});

it('judges each stream on its own', () => {
  expect(loopOverlaps([tick('a', 0), tick('b', 50, 150, 's-al'), tick('b', 1000), tick('a', 2000, 2100, 's-al')])).toEqual([]);
});
