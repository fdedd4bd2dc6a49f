/**
 * Stage settings for the tests of the deploy builders (infra/cfn/builders.ts), as serverless.yml
 * passes them: a one-minute schedule through EventBridge Scheduler, the longest processor, no
 * reserved concurrency, no MSK cluster, no VPC.
 */
import { parseSettings, type RawSettings } from '../../infra/cfn/builders';

export const DEPLOY_TEST_SETTINGS: RawSettings = {
  service: 'svc',
  stage: 'test',
  scheduleRate: 'rate(1 minute)',
  scheduleMethod: 'scheduler',
  scheduleEnabled: true,
  plannerTimeout: 90,
  processorTimeout: 900,
  processorMaximumEventAge: 960,
  processorReservedConcurrency: '',
  mskClusterArns: '',
  vpcSubnetIds: '',
  vpcSecurityGroupIds: '',
};

/** The settings above, with `over` in their place. */
export const deploySettings = (over: RawSettings = {}) => parseSettings({ ...DEPLOY_TEST_SETTINGS, ...over });
