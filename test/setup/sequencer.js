/**
 * Jest's own order (failed first, then slowest first), except that the files that load the whole
 * machine on purpose run last: the chaos suite starts 3-broker clusters and drains 960 ranges
 * through the single-core DynamoDB emulator with throttling. Beside it, other files' reads and
 * commits waited tens of seconds for the broker or the emulator and failed on their timeouts. Its
 * three parts (test/chaos/suite.ts) run last, the longest first: the second starts when the other
 * worker has finished the remaining files and the third after it, so that the first runs beside the
 * other two (about 7 minutes against 4) rather than all one after the other.
 */
const Sequencer = require('@jest/test-sequencer').default;

const LAST = [
  /[\\/]test[\\/]chaos[\\/]chaos\.test\.ts$/,
  /[\\/]test[\\/]chaos[\\/]chaos-network\.test\.ts$/,
  /[\\/]test[\\/]chaos[\\/]chaos-continuous\.test\.ts$/,
];

class HeavyLastSequencer extends Sequencer {
  async sort(tests) {
    const sorted = await super.sort(tests);
    const rank = (t) => LAST.findIndex((re) => re.test(t.path));
    const heavy = LAST.flatMap((_, i) => sorted.filter((t) => rank(t) === i));
    return [...sorted.filter((t) => rank(t) < 0), ...heavy];
  }
}

module.exports = HeavyLastSequencer;
