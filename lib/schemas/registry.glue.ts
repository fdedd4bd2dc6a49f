/**
 * The AWS Glue Schema Registry adapter: GetSchemaVersion by the schema version id a record's header
 * carries. Glue looks versions up account-wide, so the answer's schema ARN is checked against the
 * configured registry: a version of another registry is "not found" here, as it would be refused
 * on AWS where the processor's role may read only the configured registry's schemas.
 */
import type { GetSchemaVersionCommandInput, GetSchemaVersionCommandOutput, GlueClientConfig } from '@aws-sdk/client-glue';
import { SchemaRegistryError } from '../errors';
import { awsRequestHandler } from '../runtime/aws-sockets';
import type { RegistrySchemaFormat, SchemaLookup, SchemaRegistry } from '../ports/schema-registry';

/** What the adapter needs of Glue (`glueClientFromEnv`'s, or a fake in tests). */
export type GlueSender = { getSchemaVersion(input: GetSchemaVersionCommandInput): Promise<Partial<GetSchemaVersionCommandOutput>> };

export type GlueRegistrySettings = { registryName: string; region: string };

const DATA_FORMATS: Record<string, RegistrySchemaFormat> = { AVRO: 'avro', JSON: 'json-schema', PROTOBUF: 'protobuf' };
/** Glue's answers about the id itself: the record names a schema version this registry does not have. */
const NOT_FOUND_ERRORS = new Set(['EntityNotFoundException', 'InvalidInputException']);

/** The registry `settings` names, read through `client`. */
export function createGlueSchemaRegistry(client: GlueSender, settings: GlueRegistrySettings): SchemaRegistry {
  const description = `glue registry ${settings.registryName} (${settings.region})`;
  return {
    kind: 'glue',
    description,
    async lookup(id): Promise<SchemaLookup> {
      let out: Partial<GetSchemaVersionCommandOutput>;
      try {
        out = await client.getSchemaVersion({ SchemaVersionId: id });
      } catch (err) {
        if (NOT_FOUND_ERRORS.has(errorName(err)))
          return { kind: 'not-found', reason: `unknown schema version id ${id} (${awsErrorText(err)})` };
        throw glueFailure(description, id, err);
      }
      const where = schemaOfArn(out.SchemaArn);
      if (where && where.registry !== settings.registryName) {
        return { kind: 'not-found', reason: `schema version id ${id} is in registry ${where.registry}, not ${settings.registryName}` };
      }
      const format = DATA_FORMATS[out.DataFormat ?? ''];
      if (format === undefined || out.SchemaDefinition === undefined) {
        return { kind: 'not-found', reason: `schema version id ${id} has data format ${out.DataFormat ?? '(none)'}, which is not decoded` };
      }
      return {
        kind: 'found',
        schema: {
          id,
          format,
          definition: out.SchemaDefinition,
          references: [],
          ...(where && { name: where.schema }),
          ...(out.VersionNumber !== undefined && { version: out.VersionNumber }),
        },
      };
    },
  };
}

/** A GetSchemaVersion that failed for a reason outside the record: the settings to check with it. */
function glueFailure(description: string, id: string, err: unknown): SchemaRegistryError {
  const name = errorName(err);
  const denied = name === 'AccessDeniedException';
  const credentials = /UnrecognizedClient|InvalidSignature|ExpiredToken|CredentialsProvider|InvalidClientTokenId/.test(name);
  const why = denied
    ? 'access denied: the processor\'s role needs glue:GetSchemaVersion (on Resource "*": Glue does not scope a lookup by version id)'
    : credentials
      ? 'AWS credentials refused or missing'
      : 'the registry did not answer';
  return new SchemaRegistryError(`${description}: GetSchemaVersion ${id}: ${why} (${awsErrorText(err)})`, {
    cause: err,
    settings: denied ? ['glue.registryName'] : ['glue.region'],
  });
}

/** The registry and schema names of `arn:<partition>:glue:<region>:<account>:schema/<registry>/<schema>`. */
function schemaOfArn(arn: string | undefined): { registry: string; schema: string } | undefined {
  const m = /^arn:[^:]+:glue:[^:]*:[^:]*:schema\/([^/]+)\/(.+)$/.exec(arn ?? '');
  return m ? { registry: m[1]!, schema: m[2]! } : undefined;
}

/**
 * Glue for `region`: the endpoint comes from the SDK's usual settings (AWS_ENDPOINT_URL_GLUE /
 * AWS_ENDPOINT_URL). The SDK's Glue client is loaded on the first lookup: it is the largest of the
 * clients (about 16 MB and 150 ms of a cold start), and most streams name no Glue registry.
 */
export function glueClientFromEnv(region: string, env: NodeJS.ProcessEnv = process.env): GlueSender {
  const endpoint = env.AWS_ENDPOINT_URL_GLUE ?? env.AWS_ENDPOINT_URL;
  // An emulator (the local stack's) takes any credentials; AWS's come from the usual chain.
  const config: GlueClientConfig = endpoint
    ? {
        region,
        endpoint,
        credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID ?? 'local', secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? 'local' },
      }
    : { region };
  let client: Promise<{ getSchemaVersion: GlueSender['getSchemaVersion'] }> | undefined;
  const load = async () => {
    const sdk = await import('@aws-sdk/client-glue');
    // Connect, silence and socket limits as every AWS client of the functions (lib/runtime/aws-sockets.ts).
    const glue = new sdk.GlueClient({ ...config, requestHandler: awsRequestHandler() });
    return { getSchemaVersion: (input: GetSchemaVersionCommandInput) => glue.send(new sdk.GetSchemaVersionCommand(input)) };
  };
  return {
    async getSchemaVersion(input) {
      client ??= load().catch((err: unknown) => {
        client = undefined;
        throw err;
      });
      return (await client).getSchemaVersion(input);
    },
  };
}

/** Duck-typed: an error may come from another realm (a test runner's), where `instanceof Error` fails. */
function errorName(e: unknown): string {
  const name = (e as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' ? name : '';
}

function awsErrorText(e: unknown): string {
  const message = (e as { message?: unknown } | undefined)?.message;
  if (typeof message !== 'string') return String(e);
  const name = errorName(e);
  return name && name !== 'Error' && !message.startsWith(name) ? `${name}: ${message}` : message;
}
