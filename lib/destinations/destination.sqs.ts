/** Failure destination: an SQS queue (Lambda's on-failure SQS destination). One SendMessage per dead letter. */
import { SendMessageCommand, type MessageAttributeValue, type SQSClient } from '@aws-sdk/client-sqs';
import type { FailureDelivery, FailureDestination } from '../ports/failure-destination';
import { deliveryError } from './errors';

/** SQS's message limit (body and attributes together), less room for the attributes this adapter adds. */
export const SQS_MAX_BODY_BYTES = 256 * 1024 - 2048;

/** The queue URL of a queue ARN (`arn:<partition>:sqs:<region>:<account>:<name>`); SQS addresses queues by URL. */
export function queueUrlOf(queueArn: string): string {
  const [, partition, , region, account, name] = queueArn.split(':');
  const domain = partition === 'aws-cn' ? 'amazonaws.com.cn' : 'amazonaws.com';
  return `https://sqs.${region}.${domain}/${account}/${name}`;
}

/** The message attributes every delivery carries: its idempotency key and stream. */
export function deliveryAttributes(d: FailureDelivery): Record<string, MessageAttributeValue> {
  return {
    'idempotency-key': { DataType: 'String', StringValue: d.idempotencyKey },
    stream: { DataType: 'String', StringValue: d.stream },
  };
}

/** Sends each dead letter to `queueArn` with `client` (in the queue's region); a FIFO queue gets group and deduplication ids. */
export function createSqsDestination(client: SQSClient, queueArn: string): FailureDestination {
  const name = `SQS queue ${queueArn}`;
  const queueUrl = queueUrlOf(queueArn);
  const fifo = queueArn.endsWith('.fifo');
  return {
    kind: 'sqs',
    name,
    maxBodyBytes: SQS_MAX_BODY_BYTES,
    async deliver(d) {
      try {
        await client.send(
          new SendMessageCommand({
            QueueUrl: queueUrl,
            MessageBody: d.body,
            MessageAttributes: deliveryAttributes(d),
            ...(fifo ? { MessageGroupId: d.groupId, MessageDeduplicationId: d.deduplicationId } : {}),
          }),
        );
      } catch (err) {
        throw deliveryError(name, err);
      }
    },
  };
}
