/** Chaos suite, the network faults through the fault proxies and freeze-thaw (test/chaos/suite.ts). */
import { chaosSuite } from './suite';

chaosSuite('network');
