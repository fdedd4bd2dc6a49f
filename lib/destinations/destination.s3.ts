/**
 * Failure destination: an S3 bucket (Lambda's on-failure S3 destination). One PutObject per dead
 * letter, at a key derived from stream/topic/partition/offset: a redelivery overwrites the same
 * object instead of adding one.
 */
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { FailureDestination } from '../ports/failure-destination';
import { deliveryError } from './errors';

/** Writes each dead letter as `s3://<bucket>/<delivery.objectKey>` (the key carries the configured prefix). */
export function createS3Destination(client: S3Client, target: { bucket: string; prefix: string }): FailureDestination {
  const name = `S3 bucket ${target.bucket}${target.prefix ? ` (prefix ${target.prefix})` : ''}`;
  return {
    kind: 's3',
    name,
    async deliver(d) {
      try {
        await client.send(
          new PutObjectCommand({
            Bucket: target.bucket,
            Key: d.objectKey,
            Body: d.body,
            ContentType: 'application/json',
            Metadata: { 'idempotency-key': d.idempotencyKey, stream: d.stream },
          }),
        );
      } catch (err) {
        throw deliveryError(name, err);
      }
    },
  };
}
