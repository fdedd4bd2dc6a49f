/** Deployment config validation: defaults, and one clear message naming the path for each mistake. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ValidationError } from '../../../lib/errors';
import { parseDeploymentConfig, parseStreamConfig, type DeploymentConfig } from '../../../lib/config/schema';

/** A real certificate (a CA's, its key discarded): the config checks that certificates parse. */
const EXAMPLE_CA = readFileSync(join(__dirname, '..', '..', 'fixtures', 'tls', 'example-ca.pem'), 'utf8');

const minimalStream = { id: 'orders', kafka: { brokers: ['localhost:9092'] }, topics: ['orders'] };

/** A deployment with one stream: the minimal one with `patch` applied (undefined deletes a key). */
function withStream(patch: Record<string, unknown>): unknown {
  const stream: Record<string, unknown> = { ...minimalStream, ...patch };
  for (const [key, value] of Object.entries(patch)) if (value === undefined) delete stream[key];
  return { ledgerTable: 'ledger', streams: [stream] };
}

function errorOf(input: unknown, source = 'streams.json'): string {
  try {
    parseDeploymentConfig(input, source);
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return (e as ValidationError).message;
  }
  throw new Error('expected the config to be rejected');
}

describe('parseDeploymentConfig', () => {
  it('fills every default into a minimal config', () => {
    const config: DeploymentConfig = parseDeploymentConfig(withStream({}), 'streams.json');
    expect(config).toEqual({
      ledgerTable: 'ledger',
      streams: [
        {
          id: 'orders',
          kafka: { brokers: ['localhost:9092'], clientId: 'kafka-lambda-direct', connectionTimeoutMs: 3000, requestTimeoutMs: 30000 },
          topics: ['orders'],
          startingOffsets: 'earliest',
          newTopics: 'earliest',
          isolationLevel: 'read_committed',
          triggerIntervalMs: 60000,
          minRatePerPartition: 1,
          maxTriggerDelayMs: 900000,
          backpressure: { enabled: false, proportional: 1, integral: 0.2, derivative: 0, minRatePerSec: 100 },
          processor: {
            timeoutMs: 900000,
            safetyFactor: 0.8,
            leaseMs: 960000,
            commitEveryRecords: 10000,
            commitEveryMs: 5000,
            foldMaxItems: 50000,
            foldMaxRecords: 500000,
            shareInvocations: { maxRecords: 10000, maxBytes: 8388608, maxRanges: 100 },
          },
          split: { orderInsensitive: false },
          failOnDataLoss: true,
          recreatedTopicOffsets: 'earliest',
          maxAttempts: 3,
          poisonPolicy: 'dead-letter',
          expiredRecords: 'dead-letter',
          deadLetters: { retentionDays: 14, keep: 'record' },
        },
      ],
    });
  });

  it('derives the lease from the processor timeout', () => {
    const stream = parseStreamConfig({ ...minimalStream, processor: { timeoutMs: 120000 } }, 'test');
    expect(stream.processor).toEqual({
      timeoutMs: 120000,
      safetyFactor: 0.8,
      leaseMs: 180000,
      commitEveryRecords: 10000,
      commitEveryMs: 5000,
      foldMaxItems: 50000,
      foldMaxRecords: 500000,
      shareInvocations: { maxRecords: 10000, maxBytes: 8388608, maxRanges: 100 },
    });
  });

  it('accepts a full config', () => {
    const full = {
      ledgerTable: 'ledger-prod',
      streams: [
        {
          id: 'payments_eu-1',
          kafka: {
            brokers: ['b-1.example.kafka.eu-west-1.amazonaws.com:9096', '[::1]:9092'],
            clientId: 'payments',
            ssl: { rejectUnauthorized: true, ca: EXAMPLE_CA },
            sasl: {
              mechanism: 'scram-sha-512',
              username: 'svc',
              password: { secretArn: 'arn:aws:secretsmanager:eu-west-1:123:secret:kafka', field: 'password' },
            },
            connectionTimeoutMs: 5000,
            requestTimeoutMs: 20000,
          },
          topicPattern: 'payments\\..*',
          startingOffsets: { offsets: { 'payments.card': { '0': 10, '3': 0 } } },
          isolationLevel: 'read_uncommitted',
          triggerIntervalMs: 120000,
          maxRatePerPartition: 5000,
          minRatePerPartition: 10,
          maxOffsetsPerTrigger: 1000000,
          minOffsetsPerTrigger: 100,
          maxTriggerDelayMs: 60000,
          backpressure: { enabled: true, initialRatePerSec: 1000, proportional: 1, integral: 0.2, derivative: 0, minRatePerSec: 50 },
          processor: { timeoutMs: 300000, safetyFactor: 0.9, leaseMs: 400000 },
          split: { orderInsensitive: true, maxRangeSize: 100000, minPartitions: 8 },
          failOnDataLoss: false,
          maxAttempts: 5,
          maxConcurrency: 8,
          handler: { module: 'handlers/payments.js', mode: 'dynamodb-exactly-once', sinkTable: 'payments-sink' },
          poisonPolicy: 'stop-partition',
          consumerGroup: 'payments-direct',
        },
        { ...minimalStream, kafka: { brokers: ['b:9098'], sasl: { mechanism: 'aws-msk-iam', region: 'eu-west-1' } } },
        {
          ...minimalStream,
          id: 'local',
          kafka: { brokers: ['b:9092'], ssl: true, sasl: { mechanism: 'plain', username: 'u', password: { env: 'KAFKA_PASSWORD' } } },
        },
        {
          ...minimalStream,
          id: 'ssm',
          startingOffsets: { timestampMs: 1700000000000 },
          kafka: {
            brokers: ['b:9092'],
            sasl: { mechanism: 'scram-sha-256', username: 'u', password: { ssmParameter: '/kafka/password' } },
          },
        },
      ],
    };
    const config = parseDeploymentConfig(full, 'full.json');
    expect(config.streams).toHaveLength(4);
    expect(config.streams[0]?.processor.leaseMs).toBe(400000);
    expect(config.streams[0]?.maxConcurrency).toBe(8);
    expect(config.streams[1]?.maxConcurrency).toBeUndefined();
    expect(config.streams[0]?.kafka.sasl).toEqual(full.streams[0]?.kafka.sasl);
  });

  it('accepts fromGroup with its fallback, the same group as consumerGroup, and every newTopics form', () => {
    const migrating = parseStreamConfig(
      {
        ...minimalStream,
        topics: undefined,
        topicPattern: 'orders-.*',
        startingOffsets: { fromGroup: 'orders-app', fallback: 'latest' },
        consumerGroup: 'orders-app',
        newTopics: { timestampMs: 1700000000000 },
      },
      'test',
    );
    expect(migrating).toMatchObject({
      startingOffsets: { fromGroup: 'orders-app', fallback: 'latest' },
      consumerGroup: 'orders-app',
      newTopics: { timestampMs: 1700000000000 },
    });
    for (const newTopics of ['earliest', 'latest'] as const) {
      expect(parseStreamConfig({ ...minimalStream, newTopics }, 'test').newTopics).toBe(newTopics);
    }
    expect(
      parseStreamConfig({ ...minimalStream, startingOffsets: { fromGroup: 'g'.repeat(255), fallback: 'earliest' } }, 'test'),
    ).toBeDefined();
  });

  it('names the source and every offending path in one message', () => {
    const input = {
      ledgerTable: 'ledger',
      streams: [
        { ...minimalStream, maxRatePerPartition: 0 },
        { ...minimalStream, id: 'other', topics: undefined },
      ],
    };
    expect(errorOf(input)).toBe(
      'invalid config (streams.json): streams[0].maxRatePerPartition: must be > 0; ' +
        'streams[1].topics: give exactly one of topics or topicPattern (neither is set)',
    );
  });

  // [case, patch to the minimal stream, expected message fragment (after "streams[0].")]
  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ['bad id', { id: 'Orders' }, 'id: must be 1-63 characters'],
    ['id too long', { id: 'a'.repeat(64) }, 'id: must be 1-63 characters'],
    ['no brokers', { kafka: { brokers: [] } }, 'kafka.brokers: must not be empty'],
    ['broker without port', { kafka: { brokers: ['localhost'] } }, 'kafka.brokers[0]: must be "host:port"'],
    ['broker port out of range', { kafka: { brokers: ['h:70000'] } }, 'kafka.brokers[0]: must be "host:port"'],
    ['timeout not positive', { kafka: { brokers: ['h:1'], requestTimeoutMs: 0 } }, 'kafka.requestTimeoutMs: must be > 0'],
    ['timeout fractional', { kafka: { brokers: ['h:1'], connectionTimeoutMs: 1.5 } }, 'kafka.connectionTimeoutMs: must be a whole number'],
    ['ca given as a path', { kafka: { brokers: ['h:1'], ssl: { ca: '/etc/ssl/ca.pem' } } }, 'kafka.ssl.ca: must be PEM text'],
    [
      'unknown sasl mechanism',
      { kafka: { brokers: ['h:1'], sasl: { mechanism: 'gssapi' } } },
      'kafka.sasl.mechanism: must be one of "scram-sha-256", "scram-sha-512", "plain", "aws-msk-iam"',
    ],
    [
      'missing username',
      { kafka: { brokers: ['h:1'], sasl: { mechanism: 'plain', password: { env: 'P' } } } },
      'kafka.sasl.username: is required',
    ],
    [
      'plain-text password',
      { kafka: { brokers: ['h:1'], sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'hunter2' } } },
      'kafka.sasl.password: plain-text secrets are not accepted: use a secret reference',
    ],
    [
      'secret reference with two sources',
      { kafka: { brokers: ['h:1'], sasl: { mechanism: 'plain', username: 'u', password: { secretArn: 'a', env: 'B' } } } },
      'kafka.sasl.password: must be a secret reference: exactly one of',
    ],
    [
      'secret reference with a bad field',
      { kafka: { brokers: ['h:1'], sasl: { mechanism: 'plain', username: 'u', password: { secretArn: 'a', field: 7 } } } },
      'kafka.sasl.password.field: expected a string, got a number',
    ],
    ['msk iam without region', { kafka: { brokers: ['h:1'], sasl: { mechanism: 'aws-msk-iam' } } }, 'kafka.sasl.region: is required'],
    [
      'msk iam with password',
      { kafka: { brokers: ['h:1'], sasl: { mechanism: 'aws-msk-iam', region: 'us-east-1', password: { env: 'P' } } } },
      'kafka.sasl.password: unknown key',
    ],
    [
      'msk iam without tls',
      { kafka: { brokers: ['h:1'], ssl: false, sasl: { mechanism: 'aws-msk-iam', region: 'us-east-1' } } },
      'kafka.ssl: aws-msk-iam requires TLS',
    ],
    ['both topics and pattern', { topicPattern: 'orders.*' }, 'topics: give exactly one of topics or topicPattern (both are set)'],
    ['neither topics nor pattern', { topics: undefined }, 'topics: give exactly one of topics or topicPattern (neither is set)'],
    ['empty topic list', { topics: [] }, 'topics: must not be empty'],
    ['illegal topic name', { topics: ['orders', 'bad topic'] }, 'topics[1]: must be a Kafka topic name'],
    ['internal topic', { topics: ['__consumer_offsets'] }, 'topics[0]: internal topics'],
    ['invalid regex', { topics: undefined, topicPattern: 'orders(' }, 'topicPattern: is not a valid regular expression'],
    ['bad starting offsets keyword', { startingOffsets: 'earliset' }, 'startingOffsets: must be "earliest", "latest"'],
    ['negative timestamp', { startingOffsets: { timestampMs: -1 } }, 'startingOffsets.timestampMs: must be >= 0'],
    ['bad partition key', { startingOffsets: { offsets: { orders: { p0: 1 } } } }, 'startingOffsets.offsets.orders.p0: partition must be'],
    [
      'offset beyond 2^53',
      { startingOffsets: { offsets: { orders: { '0': 2 ** 60 } } } },
      'startingOffsets.offsets.orders["0"]: must be <= 9007199254740991',
    ],
    [
      'offsets for an unread topic',
      { startingOffsets: { offsets: { orderz: { '0': 1 } } } },
      'startingOffsets.offsets.orderz: the stream does not read this topic',
    ],
    ['bad isolation level', { isolationLevel: 'committed' }, 'isolationLevel: must be one of "read_committed", "read_uncommitted"'],
    ['trigger interval too short', { triggerIntervalMs: 999 }, 'triggerIntervalMs: must be >= 1000'],
    ['max rate zero', { maxRatePerPartition: 0 }, 'maxRatePerPartition: must be > 0'],
    ['min rate negative', { minRatePerPartition: -1 }, 'minRatePerPartition: must be >= 0'],
    [
      'min rate above max rate',
      { minRatePerPartition: 10, maxRatePerPartition: 5 },
      'minRatePerPartition: must be <= maxRatePerPartition (5)',
    ],
    [
      'min offsets above max offsets',
      { minOffsetsPerTrigger: 10, maxOffsetsPerTrigger: 5 },
      'minOffsetsPerTrigger: must be <= maxOffsetsPerTrigger (5)',
    ],
    ['max offsets fractional', { maxOffsetsPerTrigger: 2.5 }, 'maxOffsetsPerTrigger: must be a whole number'],
    ['backpressure min rate zero', { backpressure: { minRatePerSec: 0 } }, 'backpressure.minRatePerSec: must be > 0'],
    ['processor timeout above Lambda limit', { processor: { timeoutMs: 900001 } }, 'processor.timeoutMs: must be <= 900000'],
    ['safety factor zero', { processor: { safetyFactor: 0 } }, 'processor.safetyFactor: must be > 0'],
    ['safety factor above one', { processor: { safetyFactor: 1.2 } }, 'processor.safetyFactor: must be <= 1'],
    [
      'lease not longer than timeout',
      { processor: { timeoutMs: 60000, leaseMs: 60000 } },
      'processor.leaseMs: must be greater than processor.timeoutMs (60000)',
    ],
    [
      'split range without order insensitivity',
      { split: { maxRangeSize: 1000 } },
      'split.maxRangeSize: splitting a partition into parallel ranges breaks per-partition order',
    ],
    [
      'split partitions without order insensitivity',
      { split: { orderInsensitive: false, minPartitions: 4 } },
      'split.minPartitions: splitting',
    ],
    [
      'continuous with split ranges',
      { continuous: {}, split: { orderInsensitive: true, maxRangeSize: 1000 } },
      'split: a continuous stream reads each partition in one open segment range: it cannot be split into parallel ranges',
    ],
    [
      'continuous with split partitions',
      { continuous: {}, split: { orderInsensitive: true, minPartitions: 4 } },
      'split: a continuous stream reads each partition in one open segment range',
    ],
    [
      'continuous hand-over lead over half the segment',
      { continuous: { segmentMs: 4000, handoverLeadMs: 2001 } },
      'continuous.handoverLeadMs: must be at most half of continuous.segmentMs (4000)',
    ],
    [
      'continuous segment shorter than twice the default hand-over lead',
      { continuous: { segmentMs: 3999 } },
      'continuous.handoverLeadMs: must be at most half of continuous.segmentMs (3999)',
    ],
    [
      'continuous with minOffsetsPerTrigger',
      { continuous: {}, minOffsetsPerTrigger: 100 },
      'minOffsetsPerTrigger: a continuous stream reads records as they arrive: there is no batch to wait for',
    ],
    [
      'continuous with backpressure',
      { continuous: {}, backpressure: { enabled: true } },
      'backpressure.enabled: backpressure sizes micro-batches from their processing delay',
    ],
    ['continuous segment under 2 s', { continuous: { segmentMs: 1999 } }, 'continuous.segmentMs: must be >= 2000'],
    ['continuous segment over the Lambda limit', { continuous: { segmentMs: 900001 } }, 'continuous.segmentMs: must be <= 900000'],
    ['continuous commit interval under 10 ms', { continuous: { commitIntervalMs: 9 } }, 'continuous.commitIntervalMs: must be >= 10'],
    ['continuous lease under 2 s', { continuous: { leaseMs: 1999 } }, 'continuous.leaseMs: must be >= 2000'],
    ['continuous segment of 8 partitions', { continuous: { partitionsPerSegment: 8 } }, 'continuous.partitionsPerSegment: must be <= 7'],
    ['continuous negative lead', { continuous: { handoverLeadMs: -1 } }, 'continuous.handoverLeadMs: must be >= 0'],
    ['continuous unknown key', { continuous: { segmentSeconds: 10 } }, 'continuous.segmentSeconds: unknown key'],
    ['max attempts zero', { maxAttempts: 0 }, 'maxAttempts: must be >= 1'],
    ['max attempts above 100', { maxAttempts: 101 }, 'maxAttempts: must be <= 100'],
    ['max concurrency zero', { maxConcurrency: 0 }, 'maxConcurrency: must be > 0'],
    ['max concurrency fractional', { maxConcurrency: 2.5 }, 'maxConcurrency: must be a whole number'],
    ['max concurrency as text', { maxConcurrency: '4' }, 'maxConcurrency: expected a number'],
    [
      'exactly-once without sink table',
      { handler: { module: 'h.js', mode: 'dynamodb-exactly-once' } },
      'handler.sinkTable: is required with mode "dynamodb-exactly-once"',
    ],
    [
      'sink table with at-least-once',
      { handler: { module: 'h.js', mode: 'at-least-once', sinkTable: 'sink' } },
      'handler.sinkTable: is only used with mode "dynamodb-exactly-once"',
    ],
    [
      'declared sink table without key',
      { handler: { module: 'h.js', mode: 'dynamodb-exactly-once', sinkTable: { name: 'sink' } } },
      'handler.sinkTable: must be a table name, or { "name": <table>, "key": { "partitionKey": <attribute>, "sortKey"?: <attribute> } } to declare the table',
    ],
    [
      'declared sink table key of an unknown type',
      {
        handler: {
          module: 'h.js',
          mode: 'dynamodb-exactly-once',
          sinkTable: { name: 'sink', key: { partitionKey: { name: 'pk', type: 'X' } } },
        },
      },
      'handler.sinkTable.key.partitionKey.type: must be one of "S", "N", "B"',
    ],
    ['bad poison policy', { poisonPolicy: 'skip' }, 'poisonPolicy: must be one of "dead-letter", "stop-partition"'],
    ['dead letters kept zero days', { deadLetters: { retentionDays: 0 } }, 'deadLetters.retentionDays: must be >= 1'],
    ['dead letters keeping something else', { deadLetters: { keep: 'value' } }, 'deadLetters.keep: must be one of "record", "coordinates"'],
    ['empty consumer group', { consumerGroup: '' }, 'consumerGroup: must not be empty'],
    ['consumer group over 255 characters', { consumerGroup: 'g'.repeat(256) }, 'consumerGroup: must be at most 255 characters long'],
    [
      'fromGroup without fallback',
      { startingOffsets: { fromGroup: 'orders-app' } },
      'startingOffsets.fallback: is required with fromGroup: "earliest" or "latest", where a partition the group has no committed offset for starts',
    ],
    [
      'fromGroup with an unknown fallback',
      { startingOffsets: { fromGroup: 'orders-app', fallback: 'none' } },
      'startingOffsets.fallback: must be one of "earliest", "latest"',
    ],
    ['fromGroup empty', { startingOffsets: { fromGroup: '', fallback: 'earliest' } }, 'startingOffsets.fromGroup: must not be empty'],
    [
      'fromGroup over 255 characters',
      { startingOffsets: { fromGroup: 'g'.repeat(256), fallback: 'latest' } },
      'startingOffsets.fromGroup: must be at most 255 characters long',
    ],
    [
      'fromGroup not a string',
      { startingOffsets: { fromGroup: 42, fallback: 'latest' } },
      'startingOffsets.fromGroup: expected a string, got a number',
    ],
    [
      'fromGroup with an extra key',
      { startingOffsets: { fromGroup: 'g', fallback: 'latest', resetStrategy: 'earliest' } },
      'startingOffsets.resetStrategy: unknown key',
    ],
    ['bad newTopics keyword', { newTopics: 'oldest' }, 'newTopics: must be "earliest", "latest" or { "timestampMs": ... }'],
    [
      'newTopics with explicit offsets',
      { newTopics: { offsets: {} } },
      'newTopics: must be "earliest", "latest" or { "timestampMs": ... }',
    ],
    ['negative newTopics timestamp', { newTopics: { timestampMs: -1 } }, 'newTopics.timestampMs: must be >= 0'],
    ['wrong type', { failOnDataLoss: 'yes' }, 'failOnDataLoss: expected a boolean, got a string'],
    ['misspelt key', { maxRatePerPartion: 100 }, 'maxRatePerPartion: unknown key (did you mean "maxRatePerPartition"?)'],
    ['unknown nested key', { backpressure: { enabled: true, kp: 1 } }, 'backpressure.kp: unknown key'],
  ];

  it.each(invalid)('rejects %s', (_name, patch, expected) => {
    const message = errorOf(withStream(patch));
    expect(message).toContain(`invalid config (streams.json): `);
    expect(message).toContain(`streams[0].${expected}`);
  });

  describe('aws-msk-iam across accounts (roleArn, externalId, sessionName)', () => {
    const msk = (extra: Record<string, unknown>) => ({
      kafka: { brokers: ['b-1:9098'], sasl: { mechanism: 'aws-msk-iam', region: 'eu-west-1', ...extra } },
    });

    it.each([
      'arn:aws:iam::210987654321:role/msk-reader',
      'arn:aws:iam::210987654321:role/teams/kafka/msk-reader',
      'arn:aws-cn:iam::210987654321:role/msk+reader=1,a.b@c-d_e',
      'arn:aws-us-gov:iam::210987654321:role/r',
    ])('accepts the role %s with an external id and session name', (roleArn) => {
      const sasl = { mechanism: 'aws-msk-iam', region: 'eu-west-1', roleArn, externalId: 'partner:ext/42', sessionName: 'orders@prod' };
      expect(parseDeploymentConfig(withStream(msk(sasl)), 'streams.json').streams[0]?.kafka.sasl).toEqual(sasl);
    });

    it.each([
      ['a user, not a role', 'arn:aws:iam::210987654321:user/msk-reader'],
      ['an account id of 11 digits', 'arn:aws:iam::21098765432:role/msk-reader'],
      ['a region in an IAM ARN', 'arn:aws:iam:eu-west-1:210987654321:role/msk-reader'],
      ['no role name', 'arn:aws:iam::210987654321:role/'],
      ['a role name over 64 characters', `arn:aws:iam::210987654321:role/${'r'.repeat(65)}`],
      ['a space in the name', 'arn:aws:iam::210987654321:role/msk reader'],
      ['a wildcard', 'arn:aws:iam::210987654321:role/msk-*'],
      ['a role name only', 'msk-reader'],
      ['an assumed-role session ARN', 'arn:aws:sts::210987654321:assumed-role/msk-reader/s'],
    ])('refuses %s as roleArn', (_, roleArn) => {
      expect(errorOf(withStream(msk({ roleArn })))).toContain(
        'streams[0].kafka.sasl.roleArn: must be an IAM role ARN, e.g. "arn:aws:iam::210987654321:role/msk-reader"',
      );
    });

    it.each([
      ['externalId', { externalId: 'x' }, 'externalId: must be 2-1224 characters'],
      ['externalId', { externalId: 'has space' }, 'externalId: must be 2-1224 characters'],
      ['sessionName', { sessionName: 's'.repeat(65) }, 'sessionName: must be 2-64 characters'],
      ['sessionName', { sessionName: 'a/b' }, 'sessionName: must be 2-64 characters'],
    ])('refuses a bad %s', (_, extra, expected) => {
      expect(errorOf(withStream(msk({ roleArn: 'arn:aws:iam::210987654321:role/r', ...extra })))).toContain(
        `streams[0].kafka.sasl.${expected}`,
      );
    });

    it('refuses externalId or sessionName without roleArn, naming each', () => {
      expect(errorOf(withStream(msk({ externalId: 'ext-42', sessionName: 'orders' })))).toBe(
        'invalid config (streams.json): streams[0].kafka.sasl.externalId: is used only with roleArn: set roleArn or remove it; ' +
          'streams[0].kafka.sasl.sessionName: is used only with roleArn: set roleArn or remove it',
      );
    });
  });

  it('reports an unknown top-level key', () => {
    expect(errorOf({ ...(withStream({}) as object), ledger: 'x' })).toContain('ledger: unknown key (did you mean "ledgerTable"?)');
  });

  it('requires at least one stream and a ledger table', () => {
    expect(errorOf({ streams: [] })).toBe(
      'invalid config (streams.json): ledgerTable: is required; streams: must list at least one stream',
    );
  });

  it('rejects duplicate stream ids', () => {
    const input = { ledgerTable: 'ledger', streams: [minimalStream, { ...minimalStream, topics: ['other'] }] };
    expect(errorOf(input)).toContain('streams[1].id: duplicate stream id "orders" (also streams[0].id)');
  });

  it('rejects input that is not an object', () => {
    expect(errorOf([], 'x.json')).toBe('invalid config (x.json): expected an object, got a list');
  });

  it('quotes path segments that are not identifiers', () => {
    const message = errorOf(withStream({ topics: ['a.b'], startingOffsets: { offsets: { 'a.b': { '0': -1 } } } }));
    expect(message).toContain('streams[0].startingOffsets.offsets["a.b"]["0"]: must be >= 0');
  });

  it('never echoes a plain-text password', () => {
    const message = errorOf(withStream({ kafka: { brokers: ['h:1'], sasl: { mechanism: 'plain', username: 'u', password: 'hunter2' } } }));
    expect(message).not.toContain('hunter2');
  });

  it('accepts offsets for topics the pattern matches', () => {
    const stream = parseStreamConfig(
      { ...minimalStream, topics: undefined, topicPattern: 'orders-.*', startingOffsets: { offsets: { 'orders-eu': { '0': 5 } } } },
      'test',
    );
    expect(stream.startingOffsets).toEqual({ offsets: { 'orders-eu': { '0': 5 } } });
  });
});

describe('declared sink tables', () => {
  const handler = (sinkTable: unknown) =>
    parseDeploymentConfig(withStream({ handler: { module: './h.ts', mode: 'dynamodb-exactly-once', sinkTable } }), 's').streams[0]?.handler;

  it('keeps a plain table name as it is (a table that exists), with no key', () => {
    expect(handler('click-counts')).toEqual({ module: './h.ts', mode: 'dynamodb-exactly-once', sinkTable: 'click-counts' });
  });

  it('parses { name, key } into the name and the key schema, attribute types defaulting to S', () => {
    expect(handler({ name: 'click-counts', key: { partitionKey: 'userId', sortKey: { name: 'day', type: 'N' } } })).toEqual({
      module: './h.ts',
      mode: 'dynamodb-exactly-once',
      sinkTable: 'click-counts',
      sinkTableKey: { partitionKey: { name: 'userId', type: 'S' }, sortKey: { name: 'day', type: 'N' } },
    });
  });
});

describe('continuous mode settings', () => {
  const stream = (continuous: unknown, extra: Record<string, unknown> = {}) =>
    parseStreamConfig({ ...minimalStream, continuous, ...extra }, 'streams.json');

  it('is off unless set, and fills its defaults when set', () => {
    expect(stream(undefined).continuous).toBeUndefined();
    expect(stream({}).continuous).toEqual({
      segmentMs: 600000,
      commitIntervalMs: 100,
      leaseMs: 10000,
      partitionsPerSegment: 7,
      handoverLeadMs: 2000,
    });
  });

  it.each([
    { name: 'the shortest segment with a lead of half of it', continuous: { segmentMs: 2000, handoverLeadMs: 1000 } },
    { name: 'a segment twice the default lead', continuous: { segmentMs: 4000 } },
    { name: 'no lead', continuous: { segmentMs: 2000, handoverLeadMs: 0 } },
    { name: 'order insensitivity declared without splitting', continuous: {}, extra: { split: { orderInsensitive: true } } },
    { name: 'stream and partition rates', continuous: {}, extra: { maxOffsetsPerTrigger: 1000, maxRatePerPartition: 200 } },
    { name: 'backpressure declared but off', continuous: {}, extra: { backpressure: { enabled: false } } },
    {
      name: 'every bound at its limit',
      continuous: { segmentMs: 900000, commitIntervalMs: 10000, leaseMs: 300000, partitionsPerSegment: 1, handoverLeadMs: 60000 },
    },
  ])('accepts $name', ({ continuous, extra }) => {
    expect(stream(continuous, extra).continuous).toMatchObject(continuous);
  });
});
