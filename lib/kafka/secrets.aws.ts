/**
 * The secret resolver's AWS readers: Secrets Manager and SSM Parameter Store. Clients are created on
 * first use and kept per region, like the resolver's cache, per process; this module itself is loaded
 * on the first read (most streams read no secret from AWS, and their cold starts skip both clients).
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { SecretUnavailableError } from '../errors';
import { regionOfArn } from './secrets';
import { awsRequestHandler } from '../runtime/aws-sockets';

type Sender<C> = { send(command: C): Promise<unknown> };

const secretsManagerClients = new Map<string, SecretsManagerClient>();
const ssmClients = new Map<string, SSMClient>();

function clientFor<T>(clients: Map<string, T>, id: string, make: (region: string | undefined) => T): T {
  const region = regionOfArn(id);
  const key = region ?? '';
  let client = clients.get(key);
  if (client === undefined) {
    client = make(region);
    clients.set(key, client);
  }
  return client;
}

/** GetSecretValue with a client in the ARN's region (the function's when it names none). */
export function readSecretsManagerByArnRegion(secretId: string): Promise<string> {
  const client = clientFor(
    secretsManagerClients,
    secretId,
    (region) => new SecretsManagerClient({ ...(region !== undefined && { region }), requestHandler: awsRequestHandler() }),
  );
  return readSecretsManager(client, secretId);
}

/** GetParameter with a client in the ARN's region (the function's when it names none). */
export function readSsmParameterByArnRegion(name: string): Promise<string> {
  const client = clientFor(
    ssmClients,
    name,
    (region) => new SSMClient({ ...(region !== undefined && { region }), requestHandler: awsRequestHandler() }),
  );
  return readSsmParameter(client, name);
}

/** GetSecretValue (current version) as a string; binary secrets are read as UTF-8. */
export async function readSecretsManager(client: Sender<GetSecretValueCommand>, secretId: string): Promise<string> {
  let output: { SecretString?: string; SecretBinary?: Uint8Array };
  try {
    output = (await client.send(new GetSecretValueCommand({ SecretId: secretId }))) as typeof output;
  } catch (e) {
    throw new SecretUnavailableError(`cannot read Secrets Manager secret ${secretId}: ${awsErrorText(e)}`, { cause: e });
  }
  if (output.SecretString !== undefined) return output.SecretString;
  if (output.SecretBinary !== undefined) return Buffer.from(output.SecretBinary).toString('utf8');
  throw new SecretUnavailableError(`Secrets Manager secret ${secretId} has no value`);
}

/** GetParameter with decryption (SecureString). */
export async function readSsmParameter(client: Sender<GetParameterCommand>, name: string): Promise<string> {
  let output: { Parameter?: { Value?: string } };
  try {
    output = (await client.send(new GetParameterCommand({ Name: name, WithDecryption: true }))) as typeof output;
  } catch (e) {
    throw new SecretUnavailableError(`cannot read SSM parameter ${name}: ${awsErrorText(e)}`, { cause: e });
  }
  const value = output.Parameter?.Value;
  if (value === undefined) throw new SecretUnavailableError(`SSM parameter ${name} has no value`);
  return value;
}

function awsErrorText(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  return e.name !== 'Error' && !e.message.startsWith(e.name) ? `${e.name}: ${e.message}` : e.message;
}
