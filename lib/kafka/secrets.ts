/**
 * Resolves SecretRefs (Kafka SASL passwords, handler secrets) from Secrets Manager, SSM Parameter
 * Store or the environment. Values are cached per resolver (one per process or container) so a warm
 * Lambda does not pay a secret store round trip (and its cost and throttling) on every invocation;
 * the cache expires so a rotated secret is picked up without a cold start.
 */
import { ValidationError } from '../errors';
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
  // The AWS readers (and their SDK clients) load on the first secret read from AWS, not at every cold start.
  const readSecretsManager =
    options.readSecretsManager ?? ((id: string) => import('./secrets.aws').then((aws) => aws.readSecretsManagerByArnRegion(id)));
  const readSsmParameter =
    options.readSsmParameter ?? ((name: string) => import('./secrets.aws').then((aws) => aws.readSsmParameterByArnRegion(name)));
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

/** The region named in an ARN (a secret may live in another region than the function). */
export function regionOfArn(id: string): string | undefined {
  return /^arn:aws[a-z-]*:[a-z-]+:([a-z0-9-]+):/.exec(id)?.[1];
}
