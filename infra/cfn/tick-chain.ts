/**
 * The tick chain's resources (lib/planner/tick-chain.ts), only when a stream is ticked by it: its
 * interval is at least `tickChainFromMs` and shorter than the schedule period. An SQS queue the
 * planner sends each stream's next tick to, delayed until it is due; an event source mapping that
 * invokes the planner with each message; what the planner role needs for both; the planner's
 * environment naming the queue and the threshold.
 */
import type { DeploymentConfig, StreamConfig } from '../../lib/config/schema';
import { TICK_CHAIN_FROM_ENV, TICK_QUEUE_URL_ENV, tickModeOf } from '../../lib/planner/loop-timing';
import { getAtt, type Cfn, type CfnResources, type Statement } from './cfn';
import { IDS } from './names';
import type { Settings } from './settings';

/** The streams the tick chain ticks under these settings. */
export function chainedStreams(s: Settings, config: DeploymentConfig): StreamConfig[] {
  const o = { schedulePeriodMs: s.schedulePeriodMs, chainFromMs: s.tickChainFromMs };
  return config.streams.filter((st) => tickModeOf(st.triggerIntervalMs, o) === 'chain');
}

/**
 * Lambda's advice for a queue that invokes a function: a visibility timeout of six times the
 * function's timeout, so a message is not delivered again while an invocation (and its retries by
 * the event source mapping) may still hold it.
 */
const VISIBILITY_TIMEOUTS_PER_FUNCTION_TIMEOUT = 6;

/** The queue and its event source mapping, or nothing when no stream is chained. */
export function tickChain(s: Settings, config: DeploymentConfig): { Resources: CfnResources; Outputs: Record<string, Cfn> } {
  if (chainedStreams(s, config).length === 0) return { Resources: {}, Outputs: {} };
  return {
    Resources: {
      [IDS.tickQueue]: {
        Type: 'AWS::SQS::Queue',
        Properties: {
          // A tick is worth nothing once later ones ran: an hour is plenty for retries.
          MessageRetentionPeriod: 3600,
          VisibilityTimeout: Math.min(43_200, VISIBILITY_TIMEOUTS_PER_FUNCTION_TIMEOUT * s.plannerTimeoutSeconds),
          SqsManagedSseEnabled: true,
          // A message that fails three invocations (one that is not a tick) is kept with the schedule's undelivered ones.
          RedrivePolicy: { deadLetterTargetArn: getAtt(IDS.scheduleDeadLetterQueue, 'Arn'), maxReceiveCount: 3 },
        },
      },
      [IDS.tickQueueMapping]: {
        Type: 'AWS::Lambda::EventSourceMapping',
        // The mapping is checked against the role's permissions when it is created.
        DependsOn: [IDS.plannerRole],
        Properties: {
          EventSourceArn: getAtt(IDS.tickQueue, 'Arn'),
          FunctionName: { Ref: IDS.plannerFunction },
          // One tick per invocation: a tick waits for its due time, and a batch would hold the others.
          BatchSize: 1,
          Enabled: true,
        },
      },
    },
    Outputs: { PlannerTickQueueUrl: { Value: { Ref: IDS.tickQueue } } },
  };
}

/** The planner role's statement for the tick queue: send the next tick; the mapping receives and deletes for it. */
export function tickChainStatements(s: Settings, config: DeploymentConfig): Statement[] {
  if (chainedStreams(s, config).length === 0) return [];
  return [
    {
      Sid: 'TickChain',
      Effect: 'Allow',
      Action: ['sqs:SendMessage', 'sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:ChangeMessageVisibility'],
      Resource: [getAtt(IDS.tickQueue, 'Arn')],
    },
  ];
}

/** The planner's environment for the chain: the queue and the threshold (neither when no stream is chained). */
export function tickChainEnvironment(s: Settings, config: DeploymentConfig): Record<string, Cfn> {
  if (s.tickChainFromMs === undefined || chainedStreams(s, config).length === 0) return {};
  return { [TICK_QUEUE_URL_ENV]: { Ref: IDS.tickQueue }, [TICK_CHAIN_FROM_ENV]: String(s.tickChainFromMs) };
}
