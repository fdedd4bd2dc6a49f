/**
 * MSK IAM auth tokens, from aws-msk-iam-sasl-signer-js: AWS's maintained signer for MSK IAM, which
 * yields the OAUTHBEARER token kafkajs already supports (kafkajs has no native AWS_MSK_IAM
 * mechanism). Without `roleArn` the functions' own credentials sign. With it, the role is assumed
 * through STS (the SDK's `fromTemporaryCredentials`, which passes `externalId`; the signer's own
 * role helper cannot) and its temporary credentials sign: a cluster in another account, whose
 * policies admit that role. The signer and the SDK's providers are imported on first use, so
 * clusters without IAM auth never load them.
 */
import type { MskIamSaslConfig } from '../config/schema';
import { CredentialsError } from '../errors';

/** The temporary credentials of an assumed role (the SDK's AwsCredentialIdentity, as far as the signer reads it). */
export type AwsCredentials = { accessKeyId: string; secretAccessKey: string; sessionToken?: string; expiration?: Date };
export type CredentialsProvider = () => Promise<AwsCredentials>;

/** What STS is asked for: the role, in the cluster's region, with the external id its trust policy may require. */
export type AssumeRoleRequest = { region: string; roleArn: string; externalId?: string; sessionName: string };

/** Signs a token with the given credentials (the signer's `generateAuthTokenFromCredentialsProvider`). */
export type TokenSigner = (options: { region: string; awsCredentialsProvider: CredentialsProvider }) => Promise<{ token: string }>;

/** Returns a fresh MSK IAM auth token for the connection; `streams` are the ids it serves, named in failures. */
export type MskTokenProvider = (sasl: MskIamSaslConfig, streams?: readonly string[]) => Promise<string>;

export type MskIamDeps = {
  /** Builds the role's (uncached) credentials provider; default: STS AssumeRole through `fromTemporaryCredentials`. */
  assumeRole?: (request: AssumeRoleRequest) => CredentialsProvider;
  sign?: TokenSigner;
  nowMs?: () => number;
  /** Where the default session name comes from (AWS_LAMBDA_FUNCTION_NAME). */
  env?: NodeJS.ProcessEnv;
};

/** Assumed credentials are replaced this long before they expire (the SDK's own refresh window). */
export const CREDENTIALS_REFRESH_MARGIN_MS = 5 * 60_000;
/** Session name when neither `sessionName` nor a Lambda function name is there. */
const DEFAULT_MSK_SESSION_NAME = 'kafka-lambda-direct';

/**
 * A token provider whose assumed-role credentials live as long as it does: the module's own
 * (`mskIamToken`) lives for the cold start, so every kafkajs client of a role (metadata, readers,
 * admins) shares one set and STS is called about once an hour, not per (re)authentication.
 */
export function createMskTokenProvider(deps: MskIamDeps = {}): MskTokenProvider {
  const byRole = new Map<string, CredentialsProvider>();
  const nowMs = deps.nowMs ?? Date.now;
  const assumeRole = deps.assumeRole ?? assumeRoleWithSts;
  return async (sasl, streams = []) => {
    const { roleArn } = sasl;
    if (roleArn === undefined) return ownCredentialsToken(sasl.region);
    const request = assumeRoleRequest({ ...sasl, roleArn }, deps.env ?? process.env);
    const key = JSON.stringify(request);
    let provider = byRole.get(key);
    if (provider === undefined) {
      provider = cachedCredentials(assumeRole(request), nowMs);
      byRole.set(key, provider);
    }
    const credentials = await provider().catch((err: unknown) => {
      throw assumeRoleFailure(request, streams, err);
    });
    const sign = deps.sign ?? (await import('aws-msk-iam-sasl-signer-js')).generateAuthTokenFromCredentialsProvider;
    const { token } = await sign({ region: sasl.region, awsCredentialsProvider: async () => credentials });
    return token;
  };
}

/** The token provider of this cold start (kafkajs calls it on every authentication: a token is never reused). */
export const mskIamToken: MskTokenProvider = createMskTokenProvider();

/** Signs with the functions' own credentials (the signer's default chain: the Lambda role's). */
async function ownCredentialsToken(region: string): Promise<string> {
  const { generateAuthToken } = await import('aws-msk-iam-sasl-signer-js');
  return (await generateAuthToken({ region })).token;
}

/** The AssumeRole request of a config; the session name defaults to the function's, so the other account's CloudTrail names it. */
function assumeRoleRequest(sasl: MskIamSaslConfig & { roleArn: string }, env: NodeJS.ProcessEnv): AssumeRoleRequest {
  const fallback = (env.AWS_LAMBDA_FUNCTION_NAME ?? '').replace(/[^\w+=,.@-]/g, '').slice(0, 64);
  const sessionName = sasl.sessionName ?? (fallback.length >= 2 ? fallback : DEFAULT_MSK_SESSION_NAME);
  return {
    region: sasl.region,
    roleArn: sasl.roleArn,
    ...(sasl.externalId === undefined ? {} : { externalId: sasl.externalId }),
    sessionName,
  };
}

/**
 * The SDK's STS AssumeRole provider (the runtime ships @aws-sdk/credential-providers), in the
 * cluster's region, signed with the functions' own credentials. `clientConfig` is for tests (a
 * request handler standing in for STS).
 */
export function assumeRoleWithSts(request: AssumeRoleRequest, clientConfig: Record<string, unknown> = {}): CredentialsProvider {
  let provider: CredentialsProvider | undefined;
  return async () => {
    if (provider === undefined) {
      const { fromTemporaryCredentials } = await import('@aws-sdk/credential-providers');
      provider = fromTemporaryCredentials({
        params: {
          RoleArn: request.roleArn,
          RoleSessionName: request.sessionName,
          ...(request.externalId === undefined ? {} : { ExternalId: request.externalId }),
        },
        clientConfig: { ...clientConfig, region: request.region },
      }) as CredentialsProvider;
    }
    return provider();
  };
}

/**
 * Reuses credentials until `CREDENTIALS_REFRESH_MARGIN_MS` before they expire, with one fetch in
 * flight at a time; a failed fetch is not kept, so the next authentication asks STS again.
 * (`fromTemporaryCredentials` caches nothing itself: SDK clients memoize it, the signer does not.)
 */
export function cachedCredentials(fetch: CredentialsProvider, nowMs: () => number): CredentialsProvider {
  let current: AwsCredentials | undefined;
  let pending: Promise<AwsCredentials> | undefined;
  return () => {
    const expiresAtMs = current?.expiration?.getTime();
    if (current !== undefined && (expiresAtMs === undefined || expiresAtMs - nowMs() > CREDENTIALS_REFRESH_MARGIN_MS)) {
      return Promise.resolve(current);
    }
    pending ??= fetch()
      .then((credentials) => (current = credentials))
      .finally(() => (pending = undefined));
    return pending;
  };
}

/** One line naming the streams, the role and STS's reason; the trust policy is the usual culprit. */
function assumeRoleFailure(request: AssumeRoleRequest, streams: readonly string[], err: unknown): CredentialsError {
  const e = (typeof err === 'object' && err !== null ? err : {}) as { name?: unknown; message?: unknown };
  const reason = (typeof e.message === 'string' ? e.message : String(err)).replace(/\s*\n\s*/g, ' ');
  const name = typeof e.name === 'string' && e.name !== 'Error' ? `${e.name}: ` : '';
  const who = streams.length === 0 ? '' : `${streams.length === 1 ? 'stream' : 'streams'} ${streams.join(', ')}: `;
  const hint = /AccessDenied/.test(name)
    ? `; the role's trust policy must allow this function's role${request.externalId === undefined ? '' : ' with this externalId'}`
    : '';
  return new CredentialsError(`${who}MSK IAM cannot assume role ${request.roleArn} (STS in ${request.region}): ${name}${reason}${hint}`, {
    cause: err,
  });
}
