/** Chaos suite, the micro-batch scenarios (test/chaos/suite.ts); the continuous variants run in chaos-continuous.test.ts beside it. */
import { SCENARIOS } from './harness';
import { CONTINUOUS_VARIANTS } from './scenarios/continuous';
import { chaosSuite } from './suite';

const continuous = new Set<string>(CONTINUOUS_VARIANTS);
chaosSuite(
  'micro-batch',
  SCENARIOS.filter((s) => !continuous.has(s)),
);
