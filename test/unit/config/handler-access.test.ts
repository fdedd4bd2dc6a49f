/** A handler's extra access (`handler.iam`, `handler.environment`, `handler.secrets`): what the config accepts, and why it refuses the rest. */
import { ValidationError } from '../../../lib/errors';
import { parseDeploymentConfig, type DeploymentConfig } from '../../../lib/config/schema';
import { iamResourceProblem, usesSubstitution } from '../../../lib/config/handler-access';

const QUEUE = 'arn:aws:sqs:us-east-1:123456789012:orders';
const SECRET = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:api-AbC123';

function stream(id: string, handler: Record<string, unknown>) {
  return {
    id,
    kafka: { brokers: ['localhost:9092'] },
    topics: ['orders'],
    handler: { module: './h.ts', mode: 'at-least-once', ...handler },
  };
}

const parse = (...streams: unknown[]): DeploymentConfig => parseDeploymentConfig({ ledgerTable: 'ledger', streams }, 'streams.json');

/** The config's problems, one per line, without the "invalid config (...)" prefix. */
function problems(...streams: unknown[]): string[] {
  try {
    parse(...streams);
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return (e as Error).message.replace(/^invalid config \(streams\.json\): /, '').split('; ');
  }
  throw new Error('expected the config to be rejected');
}

const iam = (statement: Record<string, unknown>) =>
  stream('orders', { iam: [{ actions: ['sqs:SendMessage'], resources: [QUEUE], ...statement }] });

describe('handler.iam', () => {
  it('keeps named actions on named resources, with an optional sid', () => {
    const config = parse(
      stream('orders', {
        iam: [
          { actions: ['sqs:SendMessage', 'sqs:GetQueueUrl'], resources: [QUEUE] },
          { actions: ['s3:PutObject'], resources: ['arn:aws:s3:::my-bucket/orders/*'], sid: 'OrdersArchive' },
        ],
      }),
    );
    expect(config.streams[0]!.handler!.iam).toEqual([
      { actions: ['sqs:SendMessage', 'sqs:GetQueueUrl'], resources: [QUEUE] },
      { actions: ['s3:PutObject'], resources: ['arn:aws:s3:::my-bucket/orders/*'], sid: 'OrdersArchive' },
    ]);
  });

  it.each([
    ['"*"', '*', '"*" is a wildcard action: name each action, e.g. "sqs:SendMessage"'],
    ['a service wildcard', 'sqs:*', '"sqs:*" is a wildcard action: name each action, e.g. "sqs:SendMessage"'],
    ['a prefix wildcard', 's3:Get*', '"s3:Get*" is a wildcard action: name each action, e.g. "s3:PutObject"'],
    ['a single-character wildcard', 'sns:Publis?', '"sns:Publis?" is a wildcard action: name each action, e.g. "sns:Publish"'],
    ['no service', 'SendMessage', '"SendMessage" is not an IAM action: write "service:Action", e.g. "sqs:SendMessage"'],
    ['a bad action name', 'sqs:send-message', '"sqs:send-message" is not an IAM action: write "service:Action", e.g. "sqs:SendMessage"'],
  ])('refuses %s as an action, naming its path and why', (_what, action, message) => {
    expect(problems(iam({ actions: ['sqs:SendMessage', action] }))).toEqual([`streams[0].handler.iam[0].actions[1]: ${message}`]);
  });

  it.each([
    ['every resource', '*', '"*" grants every resource: name the resources by ARN'],
    ['a wildcard resource part', 'arn:aws:sqs:*:*:*', '"arn:aws:sqs:*:*:*" names every sqs resource'],
    ['a wildcard path', 'arn:aws:s3:::*/*', '"arn:aws:s3:::*/*" names every s3 resource'],
    ['a wildcard service', 'arn:aws:*:us-east-1:123456789012:orders', 'names every service'],
    [
      'a name that is no ARN',
      'orders',
      '"orders" is not an ARN: name the resource as "arn:<partition>:<service>:<region>:<account>:<resource>"',
    ],
    ['an ARN without a resource', 'arn:aws:sqs:us-east-1:123456789012:', 'is not an ARN'],
    ['an unknown partition', 'arn:amazon:sqs:us-east-1:123456789012:orders', 'is not an ARN'],
    ['another substitution', 'arn:aws:sqs:${AWS::Region}:${AWS::StackName}:orders', '"${AWS::StackName}" cannot be substituted'],
    ['an IAM policy variable', 'arn:aws:s3:::bucket/${aws:username}/*', '"${aws:username}" cannot be substituted'],
  ])('refuses %s as a resource', (_what, resource, message) => {
    const [problem, ...rest] = problems(iam({ resources: [QUEUE, resource] }));
    expect(rest).toEqual([]);
    expect(problem).toMatch(/^streams\[0\]\.handler\.iam\[0\]\.resources\[1\]: /);
    expect(problem).toContain(message);
  });

  it('accepts S3 object ARNs, named resources ending in a wildcard, and the stack pseudo parameters', () => {
    for (const resource of [
      'arn:aws:s3:::my-bucket/*',
      'arn:aws:dynamodb:us-east-1:123456789012:table/orders-*',
      'arn:aws-us-gov:sqs:us-gov-west-1:123456789012:orders',
      'arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:orders',
    ]) {
      expect(iamResourceProblem(resource)).toBeUndefined();
      expect(parse(iam({ resources: [resource] })).streams[0]!.handler!.iam![0]!.resources).toEqual([resource]);
    }
    expect(usesSubstitution('arn:aws:sqs:${AWS::Region}:123456789012:orders')).toBe(true);
    expect(usesSubstitution(QUEUE)).toBe(false);
  });

  it('refuses empty lists, an unknown key (no Deny, no NotAction) and a sid IAM would refuse', () => {
    expect(problems(iam({ actions: [], resources: [], effect: 'Deny', sid: 'orders-queue' }))).toEqual([
      'streams[0].handler.iam[0].actions: must not be empty',
      'streams[0].handler.iam[0].resources: must not be empty',
      "streams[0].handler.iam[0].sid: must be letters and digits only (IAM's rule for a statement id)",
      'streams[0].handler.iam[0].effect: unknown key',
    ]);
  });
});

describe('handler.environment', () => {
  it('keeps string values by name', () => {
    const config = parse(stream('orders', { environment: { ORDERS_QUEUE_URL: 'https://sqs.example/orders', Mode: '' } }));
    expect(config.streams[0]!.handler!.environment).toEqual({ ORDERS_QUEUE_URL: 'https://sqs.example/orders', Mode: '' });
  });

  it.each([
    ['STREAMS_CONFIG', 'is set by the stack (the streams config)'],
    ['LEDGER_TABLE', 'is set by the stack (the ledger table)'],
    ['METRICS_NAMESPACE', 'is set by the stack'],
    ['NODE_OPTIONS', 'is set by the stack'],
    ['PROCESSOR_FUNCTION_NAME', 'is set by the stack'],
    ['AUDIT_LOG_TABLE', 'is set by the stack'],
    ['DYNAMODB_ENDPOINT', 'is set by the stack'],
    ['POWERTOOLS_LOG_LEVEL', "configures the functions' logger and metrics"],
    ['POWERTOOLS_METRICS_NAMESPACE', "configures the functions' logger and metrics"],
    ['AWS_REGION', 'is reserved by Lambda'],
    ['AWS_SOMETHING_NEW', 'is reserved by Lambda'],
    ['LAMBDA_TASK_ROOT', 'is reserved by Lambda'],
    ['_HANDLER', 'is reserved by Lambda'],
    ['_X_AMZN_TRACE_ID', 'is reserved by Lambda'],
    ['TZ', 'is reserved by Lambda'],
    ['PATH', 'is set by Lambda for the Node.js runtime'],
    ['NODE_PATH', 'is set by Lambda for the Node.js runtime'],
  ])('refuses %s, saying who sets it', (name, message) => {
    const [problem, ...rest] = problems(stream('orders', { environment: { OK_NAME: 'x', [name]: 'y' } }));
    expect(rest).toEqual([]);
    expect(problem).toMatch(new RegExp(`^streams\\[0\\]\\.handler\\.environment\\.${name}: `));
    expect(problem).toContain(message);
    expect(problem).toContain('choose another name');
  });

  it('refuses names Lambda refuses (a letter first, two characters at least) and values that are not strings', () => {
    expect(problems(stream('orders', { environment: { '1ST': 'a', 'ORDERS-URL': 'b', Q: 'c', _PRIVATE: 'd', COUNT: 3 } }))).toEqual([
      `streams[0].handler.environment["1ST"]: must be an environment variable name Lambda accepts: a letter, then letters, digits or '_' (at least two characters)`,
      `streams[0].handler.environment["ORDERS-URL"]: must be an environment variable name Lambda accepts: a letter, then letters, digits or '_' (at least two characters)`,
      `streams[0].handler.environment.Q: must be an environment variable name Lambda accepts: a letter, then letters, digits or '_' (at least two characters)`,
      `streams[0].handler.environment._PRIVATE: must be an environment variable name Lambda accepts: a letter, then letters, digits or '_' (at least two characters)`,
      'streams[0].handler.environment.COUNT: expected a string, got a number',
    ]);
  });

  it('lets streams share a variable with one value, and refuses two values for one name without quoting them', () => {
    expect(() => parse(stream('a', { environment: { QUEUE_URL: 'q1' } }), stream('b', { environment: { QUEUE_URL: 'q1' } }))).not.toThrow();
    expect(
      problems(stream('a', { environment: { QUEUE_URL: 'q1' } }), stream('b', { environment: { QUEUE_URL: 'q2', OTHER: 'x' } })),
    ).toEqual([
      'streams[1].handler.environment.QUEUE_URL: streams[0].handler.environment sets QUEUE_URL to another value, but one processor function serves every stream: give both the same value or use another name',
    ]);
  });
});

describe('handler.secrets', () => {
  it('keeps Secrets Manager, SSM and environment references by name', () => {
    const secrets = {
      API_TOKEN: { secretArn: SECRET, field: 'token' },
      signingKey: { ssmParameter: '/orders/signing-key' },
      _LOCAL: { env: 'LOCAL_TOKEN' },
    };
    expect(parse(stream('orders', { secrets })).streams[0]!.handler!.secrets).toEqual(secrets);
  });

  it('refuses a plain-text value, a malformed reference and a name that is not a variable name', () => {
    const lines = problems(
      stream('orders', { secrets: { API_TOKEN: 'hunter2', KEY: { secretArn: SECRET, version: 2 }, 'api-token': { env: 'X' } } }),
    );
    expect(lines).toEqual([
      expect.stringMatching(/^streams\[0\]\.handler\.secrets\.API_TOKEN: plain-text secrets are not accepted: use a secret reference/),
      'streams[0].handler.secrets.KEY.version: unknown key',
      `streams[0].handler.secrets["api-token"]: must be a variable name: a letter or '_', then letters, digits or '_'`,
    ]);
    expect(lines.join('\n')).not.toContain('hunter2');
  });
});
