/**
 * Pure builders for the parts of the CloudFormation stack that depend on the stage's settings and
 * on the streams config, one file per resource family: `settings.ts` (params, deploy-time checks),
 * `names.ts` (logical IDs), `iam.ts` (per-function roles, with the statements handlers declare),
 * `ledger-table.ts` (the ledger table, from lib/ledger/table.ts), `sink-tables.ts` (declared sink
 * tables; both through `table-resource.ts`), `schedule.ts` (the planner schedule's target),
 * `encryption.ts` (tables, alarm topic key, log groups' key), `scan.ts` (the security scan's kept
 * findings, with their reasons), `alarms.ts` and `dashboard.ts`, `functions.ts` (VPC, concurrency,
 * environment, bundling, the segments function of continuous streams). `stack.js` resolves the
 * inputs (serverless params, the parsed streams config) and calls them through this file; the
 * deploy tests call them directly too.
 *
 * Everything returned is plain CloudFormation (JSON-shaped objects); nothing here talks to AWS.
 * Loaded by stack.js through tsx (a devDependency), so it is type-checked with the project.
 */
export type { Cfn, CfnResource, CfnResources, Statement } from './cfn';
export { alarmArnPattern, IDS, streamLogicalNames } from './names';
export {
  checkConfig,
  DeployConfigError,
  needsVpc,
  parseSettings,
  PLANNER_TIMEOUT_MARGIN_SECONDS,
  schedulePeriodMs,
  type RawSettings,
  type Settings,
} from './settings';
export {
  glueRegistryStatements,
  handlerSecretResources,
  handlerStatements,
  iamRoles,
  LEDGER_ACTIONS,
  registrySecretResources,
  secretResources,
  SINK_ACTIONS,
  sinkTables,
} from './iam';
export { schedule } from './schedule';
export { chainedStreams, tickChain, tickChainEnvironment, tickChainStatements } from './tick-chain';
export { sinkTableLogicalIds, sinkTableResources } from './sink-tables';
export { ledgerTableResources } from './ledger-table';
export { alarmTopicEncryption, logGroupEncryption, tableSse } from './encryption';
export { scanSkipMetadata, scanSkips, type ScanSkip } from './scan';
export { observability } from './alarms';
export {
  esbuildExclude,
  handlerModules,
  hasSegmentsFunction,
  plannerEnvironment,
  processorEnvironment,
  reservedConcurrency,
  RUNTIME_PROVIDED,
  SEGMENT_MAXIMUM_EVENT_AGE_SECONDS,
  SEGMENT_TIMEOUT_SECONDS,
  segmentsFunction,
  vpc,
} from './functions';
