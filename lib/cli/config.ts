/**
 * Which deployment config (and DynamoDB endpoint) the CLI works against: `--config <file>`, else
 * STREAMS_CONFIG (as the Lambdas read it), else the local demo's config written by `npm start`,
 * pointed at the recorded local stack.
 */
import { existsSync } from 'node:fs';
import { CONFIG_ENV, loadDeploymentConfig } from '../config/load';
import type { DeploymentConfig } from '../config/schema';
import { ValidationError } from '../errors';
import { DEMO_CONFIG_FILE, recordedLocalStack } from '../local/paths';

export type CliConfig = { config: DeploymentConfig; env: NodeJS.ProcessEnv; note?: string };

/** Loads and validates the config; throws ValidationError when there is none or it is invalid. */
export function loadCliConfig(configPath: string | undefined, env: NodeJS.ProcessEnv): CliConfig {
  if (configPath !== undefined) {
    const config = loadDeploymentConfig({ ...env, [CONFIG_ENV.streams]: configPath }, { from: '--config' });
    // As `npm start -- --config <file>` runs the file's streams against KAFKA_BROKERS, so does the CLI.
    if (env.KAFKA_BROKERS) for (const s of config.streams) s.kafka = { ...s.kafka, brokers: env.KAFKA_BROKERS.split(',') };
    return { config, env };
  }
  if (env[CONFIG_ENV.streams]?.trim()) return { config: loadDeploymentConfig(env), env };
  if (!existsSync(DEMO_CONFIG_FILE)) {
    throw new ValidationError(
      `no deployment config: set ${CONFIG_ENV.streams} (inline JSON or a file path, as for the Lambdas), pass --config <file>, or run \`npm start\` once to create the local demo's config`,
    );
  }
  const config = loadDeploymentConfig({ ...env, [CONFIG_ENV.streams]: DEMO_CONFIG_FILE });
  const stack = recordedLocalStack();
  const out: NodeJS.ProcessEnv = { ...env };
  const notes = [`using the local demo config ${DEMO_CONFIG_FILE}`];
  if (stack) {
    // The demo config always means the local stack, whose ports change when it is restarted.
    if (!env.KAFKA_BROKERS) {
      for (const s of config.streams) s.kafka = { ...s.kafka, brokers: [stack.kafkaBrokers] };
    }
    if (!env.DYNAMODB_ENDPOINT) {
      out.DYNAMODB_ENDPOINT = stack.dynamodbEndpoint;
      notes.push(`DynamoDB ${stack.dynamodbEndpoint}`);
    }
  }
  if (env.KAFKA_BROKERS) for (const s of config.streams) s.kafka = { ...s.kafka, brokers: env.KAFKA_BROKERS.split(',') };
  return { config, env: out, note: notes.join(', ') };
}
