/**
 * Resolves SecretRefs (Kafka SASL passwords, handler secrets) from Secrets Manager, SSM Parameter
 * Store or the environment. Values are cached per resolver (one per process or container) so a warm
 * Lambda does not pay a secret store round trip (and its cost and throttling) on every invocation;
 * the cache expires so a rotated secret is picked up without a cold start.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { SecretUnavailableError, ValidationError } from '../errors';
import type { SecretRef } from '../config/schema';

/**
 * Returns the plain value a SecretRef points to. `fresh`: read the store now, past the cache (the
 * value was refused: it may have been rotated), and keep what it says.
 */
export type SecretResolver = (ref: SecretRef, options?: { fresh?: boolean }) => Promise<string>;

/** Long enough to spare the stores on busy warm Lambdas, short enough to follow a rotation. */
const DEFAULT_SECRET_CACHE_TTL_MS = 5 * 60_000;

/** Where secrets come from; each reader returns the stored string of one secret or parameter. */
export type SecretSources = {
  readSecretsManager: (secretId: string) => Promise<string>;
  readSsmParameter: (name: string) => Promise<string>;
  env: NodeJS.ProcessEnv;
};

/** A caching resolver over the given sources (AWS and process.env unless replaced). */
export function createSecretResolver(options: Partial<SecretSources> & { ttlMs?: number; nowMs?: () => number } = {}): SecretResolver {
  const readSecretsManager = options.readSecretsManager ?? ((id: string) => readSecretsManagerByArnRegion(id));
  const readSsmParameter = options.readSsmParameter ?? ((name: string) => readSsmParameterByArnRegion(name));
  const env = options.env ?? process.env;
  const ttlMs = options.ttlMs ?? DEFAULT_SECRET_CACHE_TTL_MS;
  const nowMs = options.nowMs ?? Date.now;
  // Promises, not values: concurrent first uses share one store call.
  const cache = new Map<string, { value: Promise<string>; expiresAtMs: number }>();

  const cached = (key: string, load: () => Promise<string>, fresh: boolean): Promise<string> => {
    const hit = cache.get(key);
    if (!fresh && hit !== undefined && hit.expiresAtMs > nowMs()) return hit.value;
    const value = load();
    cache.set(key, { value, expiresAtMs: nowMs() + ttlMs });
    // A failure is not remembered: the next use retries the store.
    value.catch(() => {
      if (cache.get(key)?.value === value) cache.delete(key);
    });
    return value;
  };

  return async (ref, options = {}) => {
    const fresh = options.fresh === true;
    if ('env' in ref) {
      const value = env[ref.env];
      if (value === undefined || value === '') {
        throw new ValidationError(`environment variable ${ref.env} (a secret reference) is not set`);
      }
      return value;
    }
    if ('ssmParameter' in ref) {
      return cached(`ssm:${ref.ssmParameter}`, () => readSsmParameter(ref.ssmParameter), fresh);
    }
    const whole = await cached(`sm:${ref.secretArn}`, () => readSecretsManager(ref.secretArn), fresh);
    return ref.field === undefined ? whole : secretField(whole, ref.secretArn, ref.field);
  };
}

/** A reference as messages name it: `Secrets Manager secret <id> field "f"`, `SSM parameter <name>`, `environment variable <name>`. */
export function describeSecretRef(ref: SecretRef): string {
  if ('env' in ref) return `environment variable ${ref.env}`;
  if ('ssmParameter' in ref) return `SSM parameter ${ref.ssmParameter}`;
  return `Secrets Manager secret ${ref.secretArn}${ref.field === undefined ? '' : ` field ${JSON.stringify(ref.field)}`}`;
}

/** One string field of a JSON secret (Secrets Manager's usual `{"username":..,"password":..}`). */
export function secretField(secretString: string, secretId: string, field: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(secretString);
  } catch {
    // Never echo the secret text or the parser message (which quotes it).
    throw new ValidationError(
      `secret ${secretId} is not JSON, so it has no field ${JSON.stringify(field)}; drop "field" to use the whole secret`,
    );
  }
  const value = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>)[field] : undefined;
  if (typeof value !== 'string') {
    throw new ValidationError(`secret ${secretId} has no string field ${JSON.stringify(field)}`);
  }
  return value;
}

/** The process-wide resolver used when createKafka is not given one. */
export const resolveSecret: SecretResolver = createSecretResolver();

// ---------------------------------------------------------------------------------------------
// AWS readers. Clients are created on first use and kept per region, like the cache, per process.

type Sender<C> = { send(command: C): Promise<unknown> };

const secretsManagerClients = new Map<string, SecretsManagerClient>();
const ssmClients = new Map<string, SSMClient>();

/** The region named in an ARN (a secret may live in another region than the function). */
export function regionOfArn(id: string): string | undefined {
  return /^arn:aws[a-z-]*:[a-z-]+:([a-z0-9-]+):/.exec(id)?.[1];
}

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

function readSecretsManagerByArnRegion(secretId: string): Promise<string> {
  const client = clientFor(secretsManagerClients, secretId, (region) => new SecretsManagerClient(region === undefined ? {} : { region }));
  return readSecretsManager(client, secretId);
}

function readSsmParameterByArnRegion(name: string): Promise<string> {
  const client = clientFor(ssmClients, name, (region) => new SSMClient(region === undefined ? {} : { region }));
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
