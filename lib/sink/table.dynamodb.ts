/**
 * Declared sink tables in DynamoDB terms: the key schema a stream declares (`handler.sinkTable:
 * { name, key }`) as a table definition, used by the local runtime to create the table and by the
 * stack's builders (infra/cfn) for its CloudFormation resource, so both create the same table;
 * the `pk`-keyed table the demo, the benchmarks and the tests write into; and a sink table's items
 * for the CLI's `sink` command.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  ResourceNotFoundException,
  ScanCommand,
  type CreateTableCommandInput,
  type ScanCommandOutput,
  type TableDescription,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { SinkTableKey } from '../config/schema';
import { ConfigurationError, MissingResourceError } from '../errors';
import { translateDynamoError } from '../ledger/errors.dynamodb';

/** Key schema and attribute definitions of a declared sink table, on-demand billing. */
export function sinkTableDefinition(
  name: string,
  key: SinkTableKey,
): Required<Pick<CreateTableCommandInput, 'TableName' | 'BillingMode' | 'KeySchema' | 'AttributeDefinitions'>> {
  const attributes = [
    { attr: key.partitionKey, role: 'HASH' as const },
    ...(key.sortKey ? [{ attr: key.sortKey, role: 'RANGE' as const }] : []),
  ];
  return {
    TableName: name,
    BillingMode: 'PAY_PER_REQUEST',
    KeySchema: attributes.map(({ attr, role }) => ({ AttributeName: attr.name, KeyType: role })),
    AttributeDefinitions: attributes.map(({ attr }) => ({ AttributeName: attr.name, AttributeType: attr.type })),
  };
}

/** The key of the demo's, the benchmarks' and the tests' sink tables: `pk`, a string, as the example handlers write it. */
const PK_SINK_KEY: SinkTableKey = { partitionKey: { name: 'pk', type: 'S' } };

/** Creates an on-demand sink table keyed by `pk` (an existing one is kept, whatever its key). */
export async function createSinkTable(client: DynamoDBClient, name: string): Promise<void> {
  try {
    await client.send(new CreateTableCommand(sinkTableDefinition(name, PK_SINK_KEY)));
  } catch (err) {
    if (!(err instanceof ResourceInUseException)) throw translateDynamoError(err, `sink table ${name}`, name, 'CreateTable');
  }
}

/**
 * Whether a declared sink table exists; one that exists with another key than the one declared is
 * refused (ConfigurationError), before any write would fail on it.
 */
export async function declaredSinkTableExists(client: DynamoDBClient, name: string, key: SinkTableKey): Promise<boolean> {
  const existing = await describeTable(client, name);
  if (existing) assertSameKey(existing, name, key);
  return existing !== undefined;
}

/** Creates a declared sink table unless it exists (with the declared key); true when this call created it. */
export async function ensureSinkTable(client: DynamoDBClient, name: string, key: SinkTableKey): Promise<boolean> {
  if (await declaredSinkTableExists(client, name, key)) return false;
  try {
    await client.send(new CreateTableCommand(sinkTableDefinition(name, key)));
    return true;
  } catch (err) {
    if (err instanceof ResourceInUseException) return false;
    throw translateDynamoError(err, `sink table ${name}`, name, 'CreateTable');
  }
}

/** Fails unless a sink table named without a key schema exists (nothing here could create it). */
export async function assertSinkTableExists(client: DynamoDBClient, name: string, streams: string[]): Promise<void> {
  if (await tableExists(client, name)) return;
  throw new MissingResourceError(
    `sink table ${name} (stream ${streams.join(', ')}) does not exist: create it, or declare it in ` +
      `handler.sinkTable as { "name": "${name}", "key": { "partitionKey": "pk" } } to have it created`,
  );
}

/** `name (S)` per key attribute, hash key first, as a table's definition gives them. */
function keyText(def: Pick<TableDescription, 'KeySchema' | 'AttributeDefinitions'>): string {
  const types = new Map((def.AttributeDefinitions ?? []).map((a) => [a.AttributeName, a.AttributeType]));
  const order = (t?: string) => (t === 'HASH' ? 0 : 1);
  return [...(def.KeySchema ?? [])]
    .sort((a, b) => order(a.KeyType) - order(b.KeyType))
    .map((k) => `${k.AttributeName} (${types.get(k.AttributeName) ?? '?'})`)
    .join(', ');
}

function assertSameKey(existing: TableDescription, name: string, key: SinkTableKey): void {
  const [found, declared] = [keyText(existing), keyText(sinkTableDefinition(name, key))];
  if (found !== declared) {
    throw new ConfigurationError(
      `sink table ${name} exists with the key ${found}, but handler.sinkTable ` +
        `declares ${declared}: declare the table's key, or name another table`,
    );
  }
}

async function describeTable(client: DynamoDBClient, name: string): Promise<TableDescription | undefined> {
  try {
    return (await client.send(new DescribeTableCommand({ TableName: name }))).Table ?? {};
  } catch (err) {
    if (err instanceof ResourceNotFoundException) return undefined;
    throw translateDynamoError(err, `sink table ${name}`, name, 'DescribeTable');
  }
}

async function tableExists(client: DynamoDBClient, name: string): Promise<boolean> {
  return (await describeTable(client, name)) !== undefined;
}

/** Up to `limit` items of a sink table, as plain objects (numbers as numbers), read with a consistent scan. */
export async function scanSinkItems(client: DynamoDBClient, name: string, limit: number): Promise<Array<Record<string, unknown>>> {
  const items: Array<Record<string, unknown>> = [];
  let start: ScanCommandOutput['LastEvaluatedKey'];
  do {
    let page: ScanCommandOutput;
    try {
      page = await client.send(new ScanCommand({ TableName: name, ConsistentRead: true, ExclusiveStartKey: start }));
    } catch (err) {
      if (err instanceof ResourceNotFoundException) throw new MissingResourceError(`sink table ${name} does not exist`, { cause: err });
      throw translateDynamoError(err, `sink table ${name}`, name, 'Scan');
    }
    for (const item of page.Items ?? []) if (items.length < limit) items.push(unmarshall(item));
    start = page.LastEvaluatedKey;
  } while (start && items.length < limit);
  return items;
}
