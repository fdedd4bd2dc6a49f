/** The round-based chaos scenarios by name, each a fresh scenario (its own state) per run. */
import type { ScenarioName } from '../harness';
import type { RoundScenario } from '../scenario';
import { baseline } from './baseline';
import { brokerRestart } from './broker-restart';
import { deadline } from './deadline';
import { duplicateInvoke } from './duplicate-invoke';
import { dynamodbFaults } from './dynamodb-faults';
import { forgedPayload } from './forged-payload';
import { leaderKilled } from './leader-killed';
import { lateResponse, networkBlackHole, networkLatency, networkReset, networkTrickle } from './network';
import { partitionsAdded } from './partitions-added';
import { plannerKill } from './planner-kill';
import { planners2, planners3 } from './planners';
import { poisonRecord } from './poison-record';
import { processorKill } from './processor-kill';
import { retentionContinue, retentionFail } from './retention';
import { skewedClock } from './skewed-clock';
import { topicDeleted } from './topic-deleted';
import { continuous } from './continuous';

/** The scenarios with a runner of their own (topic-recreated.ts, large-batch.ts, load.ts, freeze-thaw.ts). */
export type OwnRunnerScenario = 'topic-recreated' | 'large-batch' | 'load' | 'freeze-thaw';

export const ROUND_SCENARIOS: Record<Exclude<ScenarioName, OwnRunnerScenario>, () => RoundScenario> = {
  baseline,
  'processor-kill': processorKill,
  'duplicate-invoke': duplicateInvoke,
  'planners-2': planners2,
  'planners-3': planners3,
  'planner-kill': plannerKill,
  'partitions-added': partitionsAdded,
  'retention-continue': retentionContinue,
  'retention-fail': retentionFail,
  'dynamodb-faults': dynamodbFaults,
  deadline,
  'poison-record': poisonRecord,
  'broker-restart': brokerRestart,
  'topic-deleted': topicDeleted,
  'forged-payload': forgedPayload,
  'skewed-clock': skewedClock,
  'leader-killed': leaderKilled,
  'network-latency': networkLatency,
  'network-trickle': networkTrickle,
  'network-reset': networkReset,
  'network-black-hole': networkBlackHole,
  'late-response': lateResponse,
  'continuous-processor-kill': continuous(processorKill),
  'continuous-duplicate-invoke': continuous(duplicateInvoke),
  'continuous-planner-kill': continuous(plannerKill),
  'continuous-dynamodb-faults': continuous(dynamodbFaults),
  'continuous-broker-restart': continuous(brokerRestart),
  'continuous-leader-killed': continuous(leaderKilled),
};

/** The scenarios run through the fault proxies (proxied.ts). */
export const NETWORK_SCENARIOS: ReadonlySet<ScenarioName> = new Set([
  'network-latency',
  'network-trickle',
  'network-reset',
  'network-black-hole',
  'late-response',
]);
