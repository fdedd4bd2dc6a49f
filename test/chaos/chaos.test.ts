/** Chaos suite, the micro-batch scenarios with faults in processes and services (test/chaos/suite.ts). */
import { chaosSuite } from './suite';

chaosSuite('processes-and-services');
