/**
 * The failure destinations of a stream (`onFailure`), made from its config: AWS SDK clients in each
 * destination's region, and a kafkajs producer on the stream's own cluster connection. Endpoints
 * follow the SDK's `AWS_ENDPOINT_URL_<SERVICE>` / `AWS_ENDPOINT_URL` (an emulator), as the ledger
 * follows DYNAMODB_ENDPOINT. Each destination's adapter and SDK client load when a stream names it
 * (made on a stream's first dead letter), so a cold start pays for none it does not use.
 */
import type { Kafka } from 'kafkajs';
import type { StreamConfig } from '../config/schema';
import type { FailureDestinations } from '../ports/failure-destination';
import { awsRequestHandler } from './aws-sockets';

/** A destination that does not answer fails within about this long (the whole request), twice at most. */
const REQUEST_TIMEOUT_MS = 10_000;

/** Client settings for an AWS service: its region, the emulator's endpoint when set, short timeouts and one retry. */
export function destinationClientConfig(env: NodeJS.ProcessEnv, service: 'SQS' | 'SNS' | 'S3', region?: string) {
  const endpoint = env[`AWS_ENDPOINT_URL_${service}`] ?? env.AWS_ENDPOINT_URL;
  return {
    ...(region ? { region } : {}),
    maxAttempts: 2,
    // The SDK's handler only warns when `requestTimeout` passes, unless told to throw: a destination
    // whose answers stopped (a black-holed connection) would hold the run until Lambda's timeout.
    // Sockets, connect and silence limits as every AWS client of the functions (aws-sockets.ts).
    requestHandler: { ...awsRequestHandler(), requestTimeout: REQUEST_TIMEOUT_MS, throwOnRequestTimeout: true },
    ...(endpoint
      ? {
          endpoint,
          region: region ?? env.AWS_REGION ?? 'us-east-1',
          credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID ?? 'local', secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? 'local' },
        }
      : {}),
  };
}

/** The region of an ARN (`arn:<partition>:<service>:<region>:...`). */
const regionOf = (arn: string): string | undefined => arn.split(':')[3] || undefined;

/** The stream's destinations, each with its own client; `kafka` gives the stream's cluster client (only called for a Kafka destination). */
export async function createStreamDestinations(
  stream: StreamConfig,
  env: NodeJS.ProcessEnv,
  kafka: () => Promise<Kafka>,
): Promise<FailureDestinations> {
  const o = stream.onFailure;
  if (!o) return {};
  const out: FailureDestinations = {};
  if (o.sqs) {
    const [{ SQSClient }, { createSqsDestination }] = await Promise.all([
      import('@aws-sdk/client-sqs'),
      import('../destinations/destination.sqs'),
    ]);
    out.sqs = createSqsDestination(new SQSClient(destinationClientConfig(env, 'SQS', regionOf(o.sqs))), o.sqs);
  }
  if (o.sns) {
    const [{ SNSClient }, { createSnsDestination }] = await Promise.all([
      import('@aws-sdk/client-sns'),
      import('../destinations/destination.sns'),
    ]);
    out.sns = createSnsDestination(new SNSClient(destinationClientConfig(env, 'SNS', regionOf(o.sns))), o.sns);
  }
  if (o.s3) {
    const [{ S3Client }, { createS3Destination }] = await Promise.all([
      import('@aws-sdk/client-s3'),
      import('../destinations/destination.s3'),
    ]);
    const local = (env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL) !== undefined;
    // A bucket's region is not in its name: the client follows S3's redirect to it.
    const client = new S3Client({ ...destinationClientConfig(env, 'S3'), followRegionRedirects: true, forcePathStyle: local });
    out.s3 = createS3Destination(client, o.s3);
  }
  if (o.kafka) {
    const { createKafkajsDestination } = await import('../destinations/destination.kafkajs');
    out.kafka = createKafkajsDestination(await kafka(), o.kafka);
  }
  return out;
}

/** Closes what destinations hold (Kafka producers) and destroys their SDK clients' sockets. */
export async function closeDestinations(d: FailureDestinations): Promise<void> {
  await Promise.allSettled(Object.values(d).map((x) => x?.close?.()));
}
