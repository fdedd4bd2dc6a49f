/** Chaos suite, the scenarios in continuous mode (test/chaos/suite.ts, test/chaos/scenarios/continuous.ts). */
import { chaosSuite } from './suite';

chaosSuite('continuous');
