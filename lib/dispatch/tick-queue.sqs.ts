/**
 * Tick queue adapter: an SQS queue whose event source mapping invokes the planner with each message
 * (batch size 1). A message's delay is SQS's `DelaySeconds`, so the queue holds each tick until it is due.
 */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { TickQueue } from '../ports/tick-queue';

/** Creates a tick queue sending to the SQS queue at `queueUrl`. */
export function createSqsTickQueue(client: SQSClient, queueUrl: string): TickQueue {
  return {
    async sendTick(tick, delayMs) {
      await client.send(
        new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(tick), DelaySeconds: Math.round(delayMs / 1000) }),
      );
    },
  };
}
