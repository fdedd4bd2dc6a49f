/** MSK IAM tokens signed with the functions' own credentials, or with a role assumed through STS (cross-account clusters). */
import { Readable } from 'node:stream';
import { parseStreamConfig, type MskIamSaslConfig } from '../../../lib/config/schema';
import { CredentialsError } from '../../../lib/errors';
import {
  assumeRoleWithSts,
  cachedCredentials,
  createMskTokenProvider,
  CREDENTIALS_REFRESH_MARGIN_MS,
  type AssumeRoleRequest,
  type AwsCredentials,
} from '../../../lib/kafka/msk-iam';

const ROLE = 'arn:aws:iam::210987654321:role/msk-reader';
const ASSUMED: AwsCredentials = {
  accessKeyId: 'ASIAASSUMEDROLE',
  secretAccessKey: 'assumed-secret',
  sessionToken: 'assumed-session-token',
  expiration: new Date('2030-01-01T01:00:00Z'),
};

/** The sasl config exactly as the stream parser yields it. */
function mskSasl(extra: Record<string, unknown> = {}): MskIamSaslConfig {
  const sasl = parseStreamConfig(
    { id: 's', topics: ['t'], kafka: { brokers: ['b-1:9098'], sasl: { mechanism: 'aws-msk-iam', region: 'eu-west-1', ...extra } } },
    'test',
  ).kafka.sasl;
  if (sasl?.mechanism !== 'aws-msk-iam') throw new Error('expected aws-msk-iam');
  return sasl;
}

/** The presigned URL inside a token: which access key signed it, and with which session token. */
function signedWith(token: string): { host: string; accessKeyId: string; sessionToken: string | null } {
  const url = new URL(Buffer.from(token, 'base64url').toString('utf8'));
  return {
    host: url.host,
    accessKeyId: (url.searchParams.get('X-Amz-Credential') ?? '').split('/')[0] ?? '',
    sessionToken: url.searchParams.get('X-Amz-Security-Token'),
  };
}

/** A fake STS: counts AssumeRole calls, returns `ASSUMED` (or throws `fail`). */
function fakeRole(fail?: Error) {
  const requests: AssumeRoleRequest[] = [];
  let calls = 0;
  return {
    requests,
    calls: () => calls,
    assumeRole: (request: AssumeRoleRequest) => {
      requests.push(request);
      return async () => {
        calls++;
        if (fail) throw fail;
        return ASSUMED;
      };
    },
  };
}

describe('MSK IAM with roleArn', () => {
  it('signs the token with the assumed role credentials, in the cluster region', async () => {
    const sts = fakeRole();
    const token = await createMskTokenProvider({ assumeRole: sts.assumeRole })(mskSasl({ roleArn: ROLE, externalId: 'ext-42' }), ['s']);
    expect(signedWith(token)).toEqual({
      host: 'kafka.eu-west-1.amazonaws.com',
      accessKeyId: 'ASIAASSUMEDROLE',
      sessionToken: 'assumed-session-token',
    });
    expect(sts.requests).toEqual([{ region: 'eu-west-1', roleArn: ROLE, externalId: 'ext-42', sessionName: 'kafka-lambda-direct' }]);
  });

  it('names the session after the function unless sessionName is set', async () => {
    const sts = fakeRole();
    const provider = createMskTokenProvider({ assumeRole: sts.assumeRole, env: { AWS_LAMBDA_FUNCTION_NAME: 'orders-prod-processor' } });
    await provider(mskSasl({ roleArn: ROLE }));
    await provider(mskSasl({ roleArn: ROLE, sessionName: 'audit@orders' }));
    expect(sts.requests.map((r) => r.sessionName)).toEqual(['orders-prod-processor', 'audit@orders']);
    expect(sts.requests[0]).not.toHaveProperty('externalId');
  });

  it('assumes the role once per cold start for every client of the role, again only near expiry', async () => {
    const sts = fakeRole();
    let nowMs = ASSUMED.expiration!.getTime() - 60 * 60_000;
    const provider = createMskTokenProvider({ assumeRole: sts.assumeRole, nowMs: () => nowMs });
    const sasl = mskSasl({ roleArn: ROLE });
    await Promise.all([provider(sasl, ['a']), provider(sasl, ['b']), provider(sasl)]);
    await provider(mskSasl({ roleArn: ROLE }));
    expect(sts.calls()).toBe(1);
    nowMs = ASSUMED.expiration!.getTime() - CREDENTIALS_REFRESH_MARGIN_MS;
    await provider(sasl);
    expect(sts.calls()).toBe(2);
    // Another role (or external id) is another set of credentials.
    await provider(mskSasl({ roleArn: ROLE, externalId: 'other' }));
    expect(sts.requests).toHaveLength(2);
  });

  it('fails in one line naming the stream and the role, and asks STS again next time', async () => {
    const denied = Object.assign(
      new Error(
        `User: arn:aws:sts::123456789012:assumed-role/PlannerRole/x\nis not authorized to perform: sts:AssumeRole on resource: ${ROLE}`,
      ),
      { name: 'AccessDenied' },
    );
    const sts = fakeRole(denied);
    const provider = createMskTokenProvider({ assumeRole: sts.assumeRole });
    const failure = await provider(mskSasl({ roleArn: ROLE, externalId: 'ext-42' }), ['payments']).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(CredentialsError);
    const error = failure as CredentialsError;
    expect(error.message).toBe(
      `stream payments: MSK IAM cannot assume role ${ROLE} (STS in eu-west-1): AccessDenied: User: arn:aws:sts::123456789012:assumed-role/PlannerRole/x ` +
        `is not authorized to perform: sts:AssumeRole on resource: ${ROLE}; the role's trust policy must allow this function's role with this externalId`,
    );
    expect(error.cause).toBe(denied);
    await expect(provider(mskSasl({ roleArn: ROLE }), ['a', 'b'])).rejects.toThrow(/^streams a, b: MSK IAM cannot assume role/);
    expect(sts.calls()).toBe(2);
  });
});

describe('cachedCredentials', () => {
  it('keeps credentials without an expiration, and drops a failed fetch', async () => {
    let n = 0;
    const fetch = jest.fn(async () => {
      n++;
      if (n === 1) throw new Error('throttled');
      return { accessKeyId: `AK${n}`, secretAccessKey: 's' };
    });
    const cached = cachedCredentials(fetch, () => 0);
    await expect(cached()).rejects.toThrow('throttled');
    expect(await cached()).toEqual({ accessKeyId: 'AK2', secretAccessKey: 's' });
    expect(await cached()).toEqual({ accessKeyId: 'AK2', secretAccessKey: 's' });
    expect(fetch).toHaveBeenCalledTimes(2);
  });
});

describe('MSK IAM without roleArn', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it("signs with the function's own credentials and asks STS nothing", async () => {
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'AKIAFUNCTIONROLE', AWS_SECRET_ACCESS_KEY: 'own', AWS_SESSION_TOKEN: 'own-token' });
    delete process.env.AWS_PROFILE;
    const sts = fakeRole();
    const token = await createMskTokenProvider({ assumeRole: sts.assumeRole })(mskSasl());
    expect(signedWith(token)).toMatchObject({ accessKeyId: 'AKIAFUNCTIONROLE', sessionToken: 'own-token' });
    expect(sts.requests).toEqual([]);
  });
});

/** Stands in for STS's HTTPS endpoint: records each request body and answers with `reply`. */
function fakeStsEndpoint(reply: { statusCode: number; body: string }) {
  const bodies: string[] = [];
  const requestHandler = {
    handle: async (request: { body?: unknown }) => {
      bodies.push(String(request.body));
      return { response: { statusCode: reply.statusCode, headers: { 'content-type': 'text/xml' }, body: Readable.from([reply.body]) } };
    },
  };
  return { bodies, requestHandler };
}

const ASSUME_ROLE_RESPONSE = `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>
<Credentials><AccessKeyId>ASIAFROMSTS</AccessKeyId><SecretAccessKey>sts-secret</SecretAccessKey><SessionToken>sts-session</SessionToken><Expiration>2030-01-01T00:00:00Z</Expiration></Credentials>
<AssumedRoleUser><AssumedRoleId>AROAEXAMPLE:kafka-lambda-direct</AssumedRoleId><Arn>arn:aws:sts::210987654321:assumed-role/msk-reader/kafka-lambda-direct</Arn></AssumedRoleUser>
</AssumeRoleResult><ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata></AssumeRoleResponse>`;

describe('assumeRoleWithSts (the SDK AssumeRole, against a stand-in endpoint)', () => {
  const base = { credentials: { accessKeyId: 'AKIAFUNCTIONROLE', secretAccessKey: 'own' }, maxAttempts: 1 };

  it('sends RoleArn, ExternalId and RoleSessionName, and the token carries what STS returned', async () => {
    const sts = fakeStsEndpoint({ statusCode: 200, body: ASSUME_ROLE_RESPONSE });
    const provider = createMskTokenProvider({ assumeRole: (r) => assumeRoleWithSts(r, { ...base, requestHandler: sts.requestHandler }) });
    const token = await provider(mskSasl({ roleArn: ROLE, externalId: 'ext-42', sessionName: 'orders-processor' }));
    expect(signedWith(token)).toMatchObject({ accessKeyId: 'ASIAFROMSTS', sessionToken: 'sts-session' });
    const params = new URLSearchParams(sts.bodies[0]);
    expect(Object.fromEntries(params)).toMatchObject({
      Action: 'AssumeRole',
      RoleArn: ROLE,
      ExternalId: 'ext-42',
      RoleSessionName: 'orders-processor',
    });
    await provider(mskSasl({ roleArn: ROLE, externalId: 'ext-42', sessionName: 'orders-processor' }));
    expect(sts.bodies).toHaveLength(1);
  });

  it("reports STS's refusal in one line naming the stream and the role", async () => {
    const sts = fakeStsEndpoint({
      statusCode: 403,
      body: `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>User: arn:aws:sts::123456789012:assumed-role/ProcessorRole/x is not authorized to perform: sts:AssumeRole on resource: ${ROLE}</Message></Error><RequestId>r-2</RequestId></ErrorResponse>`,
    });
    const provider = createMskTokenProvider({ assumeRole: (r) => assumeRoleWithSts(r, { ...base, requestHandler: sts.requestHandler }) });
    const error = (await provider(mskSasl({ roleArn: ROLE, externalId: 'ext-42' }), ['payments']).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(CredentialsError);
    expect(error.message.split('\n')).toHaveLength(1);
    expect(error.message).toMatch(
      new RegExp(`^stream payments: MSK IAM cannot assume role ${ROLE.replace(/[/.]/g, '\\$&')} \\(STS in eu-west-1\\): AccessDenied: `),
    );
    expect(error.message).toContain('not authorized to perform: sts:AssumeRole');
  });
});
