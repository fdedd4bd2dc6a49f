/** Chaos suite, the scenarios in continuous mode (test/chaos/suite.ts, test/chaos/scenarios/continuous.ts). */
import { CONTINUOUS_VARIANTS } from './scenarios/continuous';
import { chaosSuite } from './suite';

chaosSuite('continuous', CONTINUOUS_VARIANTS);
