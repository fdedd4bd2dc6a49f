/**
 * A benchmark's streams config, packaged with osls (`kafka-direct deploy`'s package step) and run as
 * deployed on the bench's services under Lambda's runtime emulator (infra/local/lambda/). Everything
 * goes under `dir` (the config, the package, the task roots); the caller removes it after `stop()`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DeploymentConfigInput } from '../lib/config/schema';
import { CACHE_DIR } from '../infra/local/stack/dirs';
import { runPackagedStack, type PackagedRun } from '../infra/local/lambda/run-packaged';
import { runPackage } from '../infra/serverless/deploy';

/** Packages `config` as stage `stage` and starts it (its schedules unless `schedules` is false). */
export async function runConfigAsDeployed(o: {
  config: DeploymentConfigInput;
  stage: string;
  stackName: string;
  dir: string;
  params?: Array<[string, string]>;
  schedules?: boolean;
}): Promise<PackagedRun> {
  const work = join(o.dir, 'project');
  mkdirSync(work, { recursive: true });
  const configFile = join(work, 'streams.json');
  writeFileSync(configFile, JSON.stringify(o.config));
  const packageDir = join(work, 'package');
  const deploy = { stage: o.stage, configFile, region: 'us-east-1', packageOnly: true, emulate: false, projectDir: work };
  const status = runPackage({ ...deploy, service: 'kafka-lambda-direct', params: o.params ?? [] }, packageDir, process.env);
  if (status !== 0) throw new Error(`sls package failed (exit ${status})`);
  return runPackagedStack({
    packageDir,
    stackName: o.stackName,
    awsEndpoint: process.env.DYNAMODB_ENDPOINT!,
    region: 'us-east-1',
    dir: join(o.dir, 'run'),
    cacheDir: CACHE_DIR,
    ...(o.schedules === false && { schedules: false }),
  });
}
