/**
 * The findings of the IaC security scan (checkov, scripts/checkov.sh) that the stack keeps on
 * purpose, each with its reason, as checkov's skip metadata on the resource
 * (`Metadata.checkov.skip`), so the template itself says why. docs/deploy.md ("Security scan") lists
 * the same; test/deploy/package.test.ts fails on any finding not skipped here, and on a skip the
 * docs do not list. A finding a param removes (a customer managed key) is skipped only while the
 * param is unset.
 */
import type { DeploymentConfig } from '../../lib/config/schema';
import type { Cfn } from './cfn';
import { hasSegmentsFunction } from './functions';
import { chainedStreams } from './tick-chain';
import { IDS } from './names';
import type { Settings } from './settings';
import { sinkTableLogicalIds } from './sink-tables';

/** One kept finding: checkov's check id and why the stack does not follow it. */
export type ScanSkip = { id: `CKV_AWS_${number}`; comment: string };

const REASONS = {
  bucketAccessLogs: {
    id: 'CKV_AWS_18',
    comment:
      'Holds only the deployment packages osls uploads (public access blocked, TLS-only policy, versioned); access ' +
      'logs would need a second bucket that is itself unlogged. CloudTrail data events can record object access.',
  },
  plannerDlq: {
    id: 'CKV_AWS_116',
    comment:
      'Invoked by the schedule with async retries off: a failed invocation is replaced ' +
      'by the next one (runs are idempotent), and one that cannot be delivered goes to ' +
      'ScheduleDeadLetterQueue. A DLQ of failed invocations would hold only {"loop":true}. ' +
      'The tick queue (when a stream is chained) redrives a message that failed three times there too.',
  },
  processorDlq: {
    id: 'CKV_AWS_116',
    comment:
      'Failed and expired asynchronous invocations go to the on-failure destination ProcessorFailureQueue (which also ' +
      'carries the error, unlike a DLQ), watched by the processor-failures alarm; the planner re-dispatches their ranges.',
  },
  segmentsDlq: {
    id: 'CKV_AWS_116',
    comment:
      'Failed and expired asynchronous invocations go to the on-failure destination ProcessorFailureQueue (which also carries ' +
      'the error, unlike a DLQ), watched by the processor-failures alarm; the planner sends the ranges of a lost segment again.',
  },
  plannerConcurrency: {
    id: 'CKV_AWS_115',
    comment:
      'One invocation per schedule period, overlapping the next by design (the loop holder hands ' +
      'over to its successor), and each stream is ticked by one at a time (the ledger loop lease). ' +
      'Reserved concurrency is taken from the account unreserved pool, which an account with the ' +
      'default quota cannot give up: the deploy would fail; one set by hand must allow at least 2.',
  },
  environmentKey: {
    id: 'CKV_AWS_173',
    comment:
      'The environment holds names and settings only (passwords are secret references read at run time); Lambda ' +
      'encrypts it at rest with its AWS managed key. The functionKmsKeyArn param sets a customer managed key.',
  },
  logsKey: {
    id: 'CKV_AWS_158',
    comment:
      'CloudWatch Logs encrypts log data at rest with its own keys. The logsKmsKey param ' +
      'sets a customer managed key (stack: one the stack creates for these log groups).',
  },
  tableKey: {
    id: 'CKV_AWS_119',
    comment: 'Encrypted at rest with KMS, the AWS managed aws/dynamodb key. The tableKmsKeyArn param sets a customer managed key.',
  },
  queueKey: {
    id: 'CKV_AWS_27',
    comment:
      'Encrypted at rest with SQS-managed keys (SSE-SQS, SqsManagedSseEnabled), which ' +
      'this check does not count. Lambda (on-failure destination), the Scheduler and an ' +
      'EventBridge rule send to it with no key grant, which a KMS key would need for each.',
  },
  tickQueueKey: {
    id: 'CKV_AWS_27',
    comment:
      'Encrypted at rest with SQS-managed keys (SSE-SQS, SqsManagedSseEnabled), which this check does not count. ' +
      'Its messages name a stream, a tick number and a due time, nothing of the records.',
  },
} as const satisfies Record<string, ScanSkip>;

/** The kept findings per logical id, for the stage's settings. */
export function scanSkips(s: Settings, config: DeploymentConfig): Record<string, ScanSkip[]> {
  const skips: Record<string, ScanSkip[]> = {
    [IDS.deploymentBucket]: [REASONS.bucketAccessLogs],
    [IDS.plannerFunction]: [REASONS.plannerDlq, REASONS.plannerConcurrency],
    [IDS.processorFunction]: [REASONS.processorDlq],
    [IDS.processorFailureQueue]: [REASONS.queueKey],
    [IDS.scheduleDeadLetterQueue]: [REASONS.queueKey],
  };
  const add = (id: string, skip: ScanSkip) => (skips[id] = [...(skips[id] ?? []), skip]);
  if (chainedStreams(s, config).length) add(IDS.tickQueue, REASONS.tickQueueKey);
  // The segments function (a continuous stream) is kept like the processor.
  const segments = hasSegmentsFunction(config);
  if (segments) add(IDS.segmentsFunction, REASONS.segmentsDlq);
  const functions = [IDS.plannerFunction, IDS.processorFunction, ...(segments ? [IDS.segmentsFunction] : [])];
  const logGroups = [IDS.plannerLogGroup, IDS.processorLogGroup, ...(segments ? [IDS.segmentsLogGroup] : [])];
  if (s.functionKmsKeyArn === undefined) for (const id of functions) add(id, REASONS.environmentKey);
  if (s.logsKmsKey === undefined) for (const id of logGroups) add(id, REASONS.logsKey);
  if (s.tableKmsKeyArn === undefined) {
    for (const id of [IDS.ledgerTable, ...sinkTableLogicalIds(s, config).values()]) add(id, REASONS.tableKey);
  }
  return skips;
}

/** The kept findings as `resources.extensions` Metadata (osls merges it into each resource, its own ones too). */
export function scanSkipMetadata(s: Settings, config: DeploymentConfig): { extensions: Record<string, { Metadata: Cfn }> } {
  const extensions: Record<string, { Metadata: Cfn }> = {};
  for (const [id, skip] of Object.entries(scanSkips(s, config))) {
    extensions[id] = { Metadata: { checkov: { skip: skip.map(({ id: checkId, comment }) => ({ id: checkId, comment })) } } };
  }
  return { extensions };
}
