/**
 * A Confluent-compatible schema registry over HTTP: `GET /schemas/ids/{id}` for a record's schema,
 * and `GET /subjects/{subject}/versions/{version}` for the schemas it references (Protobuf imports,
 * Avro named types, JSON Schema `$ref`s), with basic auth when configured.
 *
 * Written on Node's fetch rather than @kafkajs/confluent-schema-registry's client: that client
 * hands back parsed schemas only (the decoder needs the text and the references), and its Protobuf
 * decoding reads no message indexes (kafkajs/confluent-schema-registry#248). Retries are bounded and
 * short: a registry that stays down fails the range attempt, which the planner retries.
 */
import { SchemaRegistryError } from '../errors';
import { clockWithSleep, NO_JITTER, retry, systemClock, type RetryPolicy } from '../retry';
import type { RegistrySchemaFormat, SchemaLookup, SchemaReference, SchemaRegistry } from '../ports/schema-registry';

export type ConfluentRegistrySettings = { url: string; username?: string };

export type ConfluentRegistryDeps = {
  /** The basic auth password (`fresh`: read the secret store again, the last one was refused). */
  password?: (options: { fresh: boolean }) => Promise<string>;
  fetch?: typeof fetch;
  /** Per request (default 10 s). */
  timeoutMs?: number;
  /** Retries of a request that failed for a reason worth retrying (default REGISTRY_RETRIES). */
  retryPolicy?: RetryPolicy;
  sleep?: (ms: number) => Promise<void>;
};

/**
 * A registry request that got no answer, a 5xx or a 429: 3 attempts, 200 ms then 1 s, no jitter.
 * Enough for a registry restarting behind its load balancer or shedding a burst; one that stays down
 * fails the range attempt, which the planner retries, so waiting longer here only holds the Lambda.
 * Node's fetch does not retry, so these are the only retries (each bounded by `timeoutMs`).
 */
export const REGISTRY_RETRIES: RetryPolicy = {
  maxAttempts: 3,
  initialBackoffMs: 200,
  multiplier: 5,
  maxBackoffMs: 1_000,
  jitter: NO_JITTER,
};

const SCHEMA_TYPES: Record<string, RegistrySchemaFormat> = { AVRO: 'avro', PROTOBUF: 'protobuf', JSON: 'json-schema' };
/** Confluent's error codes for "no such schema / subject / version" (in a 404's JSON body). */
const NOT_FOUND_CODES = new Set([40401, 40402, 40403]);
/** Most references one schema may pull in, transitively: beyond is a cycle or a mistake. */
const MAX_REFERENCES = 100;

type RegistryAnswer = { schema?: string; schemaType?: string; references?: Array<{ name: string; subject: string; version: number }> };
type Got = { kind: 'found'; body: RegistryAnswer } | { kind: 'not-found'; message: string };

/** The registry at `settings.url`. */
export function createConfluentSchemaRegistry(settings: ConfluentRegistrySettings, deps: ConfluentRegistryDeps = {}): SchemaRegistry {
  const base = settings.url.replace(/\/+$/, '');
  const description = `confluent registry ${base}`;
  const get = createGetter(base, description, settings.username, deps);
  return {
    kind: 'confluent',
    description,
    async lookup(id): Promise<SchemaLookup> {
      if (!/^\d+$/.test(id)) return { kind: 'not-found', reason: `schema id ${id} is not a number` };
      const got = await get(`/schemas/ids/${id}`);
      if (got.kind === 'not-found') return { kind: 'not-found', reason: `unknown schema id ${id} (${got.message})` };
      const format = SCHEMA_TYPES[got.body.schemaType ?? 'AVRO'];
      if (format === undefined || typeof got.body.schema !== 'string') {
        return { kind: 'not-found', reason: `schema id ${id} has schema type ${got.body.schemaType}, which is not decoded` };
      }
      const references = await referencesOf(get, got.body.references ?? [], new Set());
      if (typeof references === 'string') return { kind: 'not-found', reason: `schema id ${id}: ${references}` };
      return { kind: 'found', schema: { id, format, definition: got.body.schema, references } };
    },
  };
}

/**
 * The referenced schemas, each after the ones it references itself (depth first), or why one is
 * missing. `seen` holds subject/version pairs already listed, so a schema shared twice is listed once.
 */
async function referencesOf(
  get: (path: string) => Promise<Got>,
  refs: NonNullable<RegistryAnswer['references']>,
  seen: Set<string>,
): Promise<SchemaReference[] | string> {
  const out: SchemaReference[] = [];
  for (const ref of refs) {
    const key = `${ref.subject}/${ref.version}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (seen.size > MAX_REFERENCES) return `more than ${MAX_REFERENCES} schema references`;
    const got = await get(`/subjects/${encodeURIComponent(ref.subject)}/versions/${encodeURIComponent(String(ref.version))}`);
    if (got.kind === 'not-found' || typeof got.body.schema !== 'string') {
      return `its reference ${ref.name} (subject ${ref.subject} version ${ref.version}) is not in the registry`;
    }
    const nested = await referencesOf(get, got.body.references ?? [], seen);
    if (typeof nested === 'string') return nested;
    out.push(...nested, { name: ref.name, definition: got.body.schema });
  }
  return out;
}

/** GET with basic auth, bounded retries, and the registry's answers sorted into found, not found and failures. */
function createGetter(base: string, description: string, username: string | undefined, deps: ConfluentRegistryDeps) {
  const doFetch = deps.fetch ?? fetch;
  const timeoutMs = deps.timeoutMs ?? 10_000;
  const policy = deps.retryPolicy ?? REGISTRY_RETRIES;
  const clock = deps.sleep ? clockWithSleep(deps.sleep) : systemClock;
  const fail = (path: string, why: string, settings: string[], cause?: unknown) =>
    new SchemaRegistryError(`${description}: GET ${path}: ${why}`, { cause, settings });

  const attempt = async (path: string, fresh: boolean): Promise<Response> => {
    const headers: Record<string, string> = { Accept: 'application/vnd.schemaregistry.v1+json, application/json' };
    if (username !== undefined && deps.password) {
      let password: string;
      try {
        password = await deps.password({ fresh });
      } catch (err) {
        throw fail(path, `the password cannot be read (${err instanceof Error ? err.message : String(err)})`, ['confluent.password'], err);
      }
      headers.Authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
    }
    try {
      // A 5xx or 429 answer is asked again; the last one is returned when the retries run out.
      return await retry(() => doFetch(`${base}${path}`, { headers, signal: AbortSignal.timeout(timeoutMs) }), policy, {
        isRetriable: () => true, // no answer at all (refused, reset, timed out)
        retryValue: (res) => res.status >= 500 || res.status === 429,
        onRetry: async (reason) => {
          if ('value' in reason) await reason.value.body?.cancel().catch(() => undefined);
        },
        clock,
      });
    } catch (error) {
      throw fail(path, `no answer (${networkText(error)})`, ['confluent.url'], error);
    }
  };

  return async (path: string): Promise<Got> => {
    let res = await attempt(path, false);
    // A refused password may have been rotated: read the secret again once, past its cache.
    if ((res.status === 401 || res.status === 403) && username !== undefined) {
      await res.body?.cancel().catch(() => undefined);
      res = await attempt(path, true);
    }
    const text = await res.text().catch(() => '');
    const body = parseJson(text);
    if (res.ok && body !== undefined) return { kind: 'found', body: body as RegistryAnswer };
    const code = typeof body === 'object' && body !== null ? (body as { error_code?: unknown }).error_code : undefined;
    const message = typeof body === 'object' && body !== null ? String((body as { message?: unknown }).message ?? '') : '';
    if (res.status === 404 && typeof code === 'number' && NOT_FOUND_CODES.has(code))
      return { kind: 'not-found', message: `${code} ${message}`.trim() };
    if (res.status === 401 || res.status === 403) {
      throw fail(path, `${res.status}: credentials refused`, ['confluent.username', 'confluent.password']);
    }
    const what = res.ok
      ? `${res.status} with a body that is not JSON`
      : `${res.status}${code !== undefined ? ` (error ${code})` : ''} ${message || text.slice(0, 200)}`.trim();
    throw fail(path, `answered ${what}`, ['confluent.url']);
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * fetch's network failures hide the reason (ECONNREFUSED, ENOTFOUND) in `cause`. Duck-typed: undici's
 * errors may come from another realm (a test runner's), where `instanceof Error` fails.
 */
function networkText(err: unknown): string {
  const e = err as { name?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } } | undefined;
  if (typeof e?.message !== 'string') return String(err);
  const cause = e.cause ? `: ${String(e.cause.code ?? e.cause.message)}` : '';
  return `${e.name === 'TimeoutError' ? 'timed out' : e.message}${cause}`;
}
