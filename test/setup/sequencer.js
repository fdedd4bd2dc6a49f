/**
 * Jest's own order (failed first, then slowest first), except that the files that load the whole
 * machine on purpose run last: the chaos suite starts a 3-broker cluster and drains 960 ranges
 * through the single-core DynamoDB emulator with throttling. Beside it, other files' reads and
 * commits waited tens of seconds for the broker or the emulator and failed on their timeouts; alone
 * at the end it takes about 6 minutes and slows nothing else.
 */
const Sequencer = require('@jest/test-sequencer').default;

const LAST = [/[\\/]test[\\/]chaos[\\/]chaos\.test\.ts$/];

class HeavyLastSequencer extends Sequencer {
  async sort(tests) {
    const sorted = await super.sort(tests);
    const heavy = (t) => LAST.some((re) => re.test(t.path));
    return [...sorted.filter((t) => !heavy(t)), ...sorted.filter(heavy)];
  }
}

module.exports = HeavyLastSequencer;
