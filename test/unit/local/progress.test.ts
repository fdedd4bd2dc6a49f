/** The live view says what is true: the partitions there are now, lag = latest - committed, unregistered partitions with their full lag. */
import { frameLine, renderFrame, type ProgressFrame } from '../../../lib/local/progress';

const frame = (over: Partial<ProgressFrame> = {}): ProgressFrame => ({
  elapsedMs: 31_000,
  stream: 'demo-x',
  phase: 'producing',
  produced: 1000,
  producedPerSec: 250,
  partitions: [
    { topic: 't', partition: 0, committed: 300, earliest: 0, latest: 340, lag: 40, inFlight: 1 },
    { topic: 't', partition: 1, committed: 310, earliest: 0, latest: 330, lag: 20, inFlight: 1 },
    { topic: 't', partition: 2, committed: 320, earliest: 0, latest: 320, lag: 0, inFlight: 0 },
    // Added a moment ago, not registered by the planner yet: its whole log is lag.
    { topic: 't', partition: 3, earliest: 0, latest: 10, lag: 10, inFlight: 0 },
  ],
  invocations: 12,
  plannerRuns: 31,
  inFlight: 2,
  deadLetters: 0,
  errors: 0,
  events: ['stream demo-x: topic t created with 3 partitions'],
  ...over,
});

describe('progress view', () => {
  it('counts the partitions there are now and shows lag = latest - committed', () => {
    const lines = renderFrame(frame());
    expect(lines[0]).toMatch(/ 4 partitions \(1 not registered yet\) /);
    expect(lines[1]).toMatch(/latest 1000 {3}committed 930 {3}lag 70 /);
    const row3 = lines.find((l) => /^t +3 /.test(l));
    expect(row3).toMatch(/^t +3 +not registered yet +10 +10 /);
  });

  it('never shows an unregistered partition as lag 0', () => {
    const lines = renderFrame(frame({ partitions: [{ topic: 't', partition: 0, earliest: 5, latest: 25, lag: undefined, inFlight: 0 }] }));
    expect(lines[1]).toMatch(/lag 20 /);
    expect(frameLine(frame())).toMatch(/latest=1000 committed=930 lag=70 .* partitions=4 unregistered=1 /);
  });

  it('claims no produced records in a run that produces none (a config run reads what others wrote)', () => {
    const f = frame({ produced: undefined, producedPerSec: undefined, phase: 'until caught up' });
    expect(frameLine(f)).toMatch(/^\[31\.0s\] until caught up: latest=1000 committed=930 lag=70 /);
    expect(frameLine(f)).not.toMatch(/produced/);
    expect(renderFrame(f)[1]).toMatch(/^latest 1000 {3}committed 930 {3}lag 70 /);
    // The demo produces: its lines keep the count.
    expect(frameLine(frame())).toMatch(/ producing: produced=1000 latest=1000 /);
    expect(renderFrame(frame())[1]).toMatch(/^produced 1000 \(250\/s\) {3}latest 1000 /);
  });
});
