/** Failure destination: an SNS topic (Lambda's on-failure SNS destination). One Publish per dead letter. */
import { PublishCommand, type SNSClient } from '@aws-sdk/client-sns';
import type { FailureDestination } from '../ports/failure-destination';
import { deliveryError } from './errors';

/** SNS's message limit (message and attributes together), less room for the attributes this adapter adds. */
export const SNS_MAX_BODY_BYTES = 256 * 1024 - 2048;

/** Publishes each dead letter to `topicArn` with `client` (in the topic's region); a FIFO topic gets group and deduplication ids. */
export function createSnsDestination(client: SNSClient, topicArn: string): FailureDestination {
  const name = `SNS topic ${topicArn}`;
  const fifo = topicArn.endsWith('.fifo');
  return {
    kind: 'sns',
    name,
    maxBodyBytes: SNS_MAX_BODY_BYTES,
    async deliver(d) {
      try {
        await client.send(
          new PublishCommand({
            TopicArn: topicArn,
            Message: d.body,
            MessageAttributes: {
              'idempotency-key': { DataType: 'String', StringValue: d.idempotencyKey },
              stream: { DataType: 'String', StringValue: d.stream },
            },
            ...(fifo ? { MessageGroupId: d.groupId, MessageDeduplicationId: d.deduplicationId } : {}),
          }),
        );
      } catch (err) {
        throw deliveryError(name, err);
      }
    },
  };
}
