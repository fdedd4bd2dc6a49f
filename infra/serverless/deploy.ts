/**
 * `kafka-direct deploy --stage <s>` (a stream project's `npm run deploy`): packages the engine's
 * serverless.yml with the project's streams config and handler files, into the project's
 * `.serverless/<stage>/`, then deploys that package (`--package-only` stops after packaging, and
 * needs no AWS access). It runs osls, the open-source Serverless Framework v3 the engine depends on,
 * from the engine's directory; serverless-esbuild's work folder goes to the project's
 * `.esbuild/<stage>/`. The stack is `<service>-<stage>`, service being the project's name.
 * `kafka-direct remove --stage <s>` deletes that stack (`sls remove`: the deployment bucket is
 * emptied first), with the same config and params.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { Command, Option } from 'commander';
import { parseArgv, usageLine } from '../../lib/cli/args';
import { ValidationError } from '../../lib/errors';
import { PACKAGE_ROOT } from '../../lib/paths';
import { findStreamProject, SERVICE_NAME, serviceNameOf } from '../../lib/project/project';

export type DeployOptions = {
  stage: string;
  configFile: string;
  region: string;
  packageOnly: boolean;
  /** Run the packaged stack on the local stack under Lambda's runtime emulator instead of deploying (emulate.ts). */
  emulate: boolean;
  service: string;
  params: Array<[string, string]>;
  /** Where the project keeps `.serverless/` and `.esbuild/`. */
  projectDir: string;
};

/** `deploy`'s (or `remove`'s) options, without parsing: `parseDeployArgs` parses with it, the docs' test reads it. */
export function deployProgram(command: 'deploy' | 'remove' = 'deploy'): Command {
  const program = new Command(`kafka-direct ${command}`)
    .description(
      command === 'deploy'
        ? "package the engine's serverless.yml with the project's streams config into .serverless/<stage>/, then deploy it"
        : "delete the stage's stack (sls remove), with the same config and params it was deployed with",
    )
    .addOption(new Option('--stage <stage>', "the stage: letters, digits, '-'; at most 16").makeOptionMandatory())
    .option('--config <file>', "the streams config (default: the stream project's)")
    .option('--region <region>', 'the AWS region (default: AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1)');
  if (command === 'deploy') {
    program
      .option('--package-only', 'stop after packaging (needs no AWS access)')
      .option('--emulate', "run the packaged stack on the local stack under Lambda's runtime emulator instead of deploying");
  }
  return program
    .option('--service <name>', "the service, the stack being <service>-<stage> (default: the project's name)")
    .addOption(
      new Option('--param <name=value>', 'a serverless.yml param (repeatable)')
        .argParser((p: string, params: string[]) => [...params, p])
        .default([], 'none'),
    );
}

/** The options as `deployProgram` declares them. */
type DeployFlags = {
  stage: string;
  config?: string;
  region?: string;
  packageOnly?: boolean;
  emulate?: boolean;
  service?: string;
  param: string[];
};

/** The options, validated before osls starts; ValidationError with the usage on anything wrong. */
export function parseDeployArgs(
  argv: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  command: 'deploy' | 'remove' = 'deploy',
): DeployOptions {
  const program = deployProgram(command);
  const usage = usageLine(program);
  const v = parseArgv<DeployFlags>(program, argv, (reason) => new ValidationError(`${reason}\n${usage}`)).opts;
  if (!v.stage || !/^[a-zA-Z0-9-]{1,16}$/.test(v.stage))
    throw new ValidationError(`--stage <stage> is required (letters, digits, '-'; at most 16)\n${usage}`);
  const project = findStreamProject(cwd);
  const configFile = v.config !== undefined ? resolve(cwd, v.config) : project?.configFile;
  if (!configFile)
    throw new ValidationError(`no streams config: pass --config <file>, or run in a stream project (kafka-direct init)\n${usage}`);
  if (!existsSync(configFile)) throw new ValidationError(`--config: ${configFile} does not exist`);
  const service = v.service ?? (project ? serviceNameOf(project) : 'kafka-lambda-direct');
  if (!SERVICE_NAME.test(service)) throw new ValidationError(`--service ${JSON.stringify(service)} must match ${SERVICE_NAME}`);
  const params = v.param.map((p): [string, string] => {
    const eq = p.indexOf('=');
    if (eq < 1) throw new ValidationError(`--param ${JSON.stringify(p)}: expected name=value\n${usage}`);
    return [p.slice(0, eq), p.slice(eq + 1)];
  });
  if (params.some(([name]) => name === 'streamsConfig')) throw new ValidationError('--param streamsConfig: use --config <file>');
  const region = v.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1';
  const emulate = v.emulate === true;
  if (emulate && v.packageOnly) throw new ValidationError(`--emulate and --package-only: choose one\n${usage}`);
  return {
    stage: v.stage,
    configFile,
    region,
    packageOnly: v.packageOnly === true,
    emulate,
    service,
    params,
    projectDir: project?.dir ?? cwd,
  };
}

/** Deletes the stage's stack with osls (see the file's comment); the exit code is osls's. */
export function runRemove(o: DeployOptions, env: NodeJS.ProcessEnv): number {
  return osls('remove', o, join(o.projectDir, '.serverless', o.stage), env);
}

/** Runs the deploy (see the file's comment); resolves to the exit code, osls's output passed through. */
export function runDeploy(o: DeployOptions, env: NodeJS.ProcessEnv, err: (s: string) => void): number {
  const packageDir = join(o.projectDir, '.serverless', o.stage);
  const packaged = osls('package', o, packageDir, env);
  if (packaged !== 0) return packaged;
  err(
    `[deploy] packaged stage ${o.stage} of ${o.service} into ` +
      `${relative(process.cwd(), packageDir) || packageDir}: ${artifacts(packageDir)}\n`,
  );
  if (o.packageOnly) return 0;
  return osls('deploy', o, packageDir, env);
}

/** `sls package` of the stage into `packageDir` (the exit code is osls's). */
export function runPackage(o: DeployOptions, packageDir: string, env: NodeJS.ProcessEnv): number {
  return osls('package', o, packageDir, env);
}

/** One osls command from the engine's directory; its output is the user's to read. */
type OslsCommand = 'package' | 'deploy' | 'remove';

function osls(command: OslsCommand, o: DeployOptions, packageDir: string, env: NodeJS.ProcessEnv): number {
  const bin = join(PACKAGE_ROOT, 'node_modules', 'osls', 'bin', 'serverless.js');
  const sls = existsSync(bin) ? bin : require.resolve('osls/bin/serverless.js', { paths: [PACKAGE_ROOT] });
  const args = [sls, command, '--stage', o.stage, '--region', o.region, ...(command === 'remove' ? [] : ['--package', packageDir])];
  args.push('--param', `streamsConfig=${o.configFile}`);
  for (const [name, value] of o.params) args.push('--param', `${name}=${value}`);
  const run = spawnSync(process.execPath, args, { cwd: PACKAGE_ROOT, env: deployEnv(o, env, command), stdio: 'inherit' });
  if (run.error) throw run.error;
  return run.status ?? 1;
}

function deployEnv(o: DeployOptions, env: NodeJS.ProcessEnv, command: OslsCommand): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {
    ...env,
    KAFKA_DIRECT_SERVICE: o.service,
    // Relative to the engine's directory: serverless-esbuild joins it onto the service directory.
    KAFKA_DIRECT_ESBUILD_DIR: relative(PACKAGE_ROOT, join(o.projectDir, '.esbuild', o.stage)),
    SLS_TELEMETRY_DISABLED: '1',
  };
  // The functions read their config from the stack, never from this shell.
  delete out.STREAMS_CONFIG;
  delete out.LEDGER_TABLE;
  // Packaging reads no AWS account: without credentials, give osls placeholders so it does not ask for them.
  const hasCredentials = env.AWS_ACCESS_KEY_ID || env.AWS_PROFILE || env.AWS_DEFAULT_PROFILE || env.AWS_CONTAINER_CREDENTIALS_FULL_URI;
  if (command === 'package' && !hasCredentials) Object.assign(out, { AWS_ACCESS_KEY_ID: 'packaging', AWS_SECRET_ACCESS_KEY: 'packaging' });
  return out;
}

function artifacts(dir: string): string {
  const files = readdirSync(dir).filter((f) => f.endsWith('.zip') || f.endsWith('.json'));
  return files.map((f) => `${f} (${Math.ceil(statSync(join(dir, f)).size / 1024)} KiB)`).join(', ');
}
