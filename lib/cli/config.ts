/**
 * Which deployment config (and endpoints) the CLI works against: `--config <file>`, else
 * STREAMS_CONFIG (as the Lambdas read it), else the stream project's config (the nearest package.json
 * with a `kafkaDirect` field, see lib/project/project.ts), else the local demo's config written by
 * `npm start`, pointed at the recorded local stack. `--local` points any of them at the recorded local
 * stack (what `npm start` / `kafka-direct start` ran on), as the demo config always is.
 */
import { existsSync } from 'node:fs';
import { CONFIG_ENV, loadDeploymentConfig } from '../config/load';
import type { DeploymentConfig } from '../config/schema';
import { ValidationError } from '../errors';
import { DEMO_CONFIG_FILE, recordedLocalStack } from '../local/paths';
import { findStreamProject } from '../project/project';

export type CliConfig = { config: DeploymentConfig; env: NodeJS.ProcessEnv; note?: string };

export type CliConfigOptions = {
  /** Use the recorded local stack's Kafka and DynamoDB (unless KAFKA_BROKERS / DYNAMODB_ENDPOINT say otherwise). */
  local?: boolean;
  /** Where to look for a stream project (default: the working directory). */
  cwd?: string;
};

/** Loads and validates the config; throws ValidationError when there is none or it is invalid. */
export function loadCliConfig(configPath: string | undefined, env: NodeJS.ProcessEnv, opts: CliConfigOptions = {}): CliConfig {
  const file = configPath ?? (env[CONFIG_ENV.streams]?.trim() ? undefined : findStreamProject(opts.cwd ?? process.cwd())?.configFile);
  if (file !== undefined) {
    const from = configPath !== undefined ? '--config' : 'the project config';
    const config = loadDeploymentConfig(
      { ...env, [CONFIG_ENV.streams]: file },
      { from: configPath !== undefined ? '--config' : undefined },
    );
    const loaded = { config, env, note: configPath === undefined ? `using ${from} ${file}` : undefined };
    return opts.local ? onLocalStack(loaded, { required: true }) : withKafkaBrokers(loaded);
  }
  if (env[CONFIG_ENV.streams]?.trim()) {
    const loaded = { config: loadDeploymentConfig(env), env };
    return opts.local ? onLocalStack(loaded, { required: true }) : loaded;
  }
  if (!existsSync(DEMO_CONFIG_FILE)) {
    throw new ValidationError(
      `no deployment config: set ${CONFIG_ENV.streams} (inline JSON or a file path, as for the ` +
        `Lambdas), pass --config <file>, or run \`npm start\` once to create the local demo's config`,
    );
  }
  const config = loadDeploymentConfig({ ...env, [CONFIG_ENV.streams]: DEMO_CONFIG_FILE });
  return onLocalStack({ config, env, note: `using the local demo config ${DEMO_CONFIG_FILE}` }, { required: false });
}

/** As `npm start -- --config <file>` runs the file's streams against KAFKA_BROKERS, so does the CLI. */
function withKafkaBrokers(c: CliConfig): CliConfig {
  const brokers = c.env.KAFKA_BROKERS;
  if (brokers) for (const s of c.config.streams) s.kafka = { ...s.kafka, brokers: brokers.split(',') };
  return c;
}

/** The config pointed at the recorded local stack, where KAFKA_BROKERS / DYNAMODB_ENDPOINT do not name other services. */
function onLocalStack(c: CliConfig, o: { required: boolean }): CliConfig {
  const stack = recordedLocalStack();
  if (!stack) {
    // KAFKA_BROKERS and DYNAMODB_ENDPOINT together name a local stack of their own (as for `start`).
    if (o.required && !(c.env.KAFKA_BROKERS && c.env.DYNAMODB_ENDPOINT))
      throw new ValidationError('--local: no local stack is recorded; start it with `kafka-direct start` or `kafka-direct local up`');
    return withKafkaBrokers(c);
  }
  const env: NodeJS.ProcessEnv = { ...c.env };
  const notes = c.note ? [c.note] : [];
  // The local stack's ports change when it is restarted: take them from its record.
  if (!env.KAFKA_BROKERS) for (const s of c.config.streams) s.kafka = { ...s.kafka, brokers: [stack.kafkaBrokers] };
  if (!env.DYNAMODB_ENDPOINT) {
    env.DYNAMODB_ENDPOINT = stack.dynamodbEndpoint;
    notes.push(`DynamoDB ${stack.dynamodbEndpoint}`);
  }
  return withKafkaBrokers({ config: c.config, env, note: notes.join(', ') || undefined });
}
