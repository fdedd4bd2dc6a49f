/**
 * The local Lambda's SQS event source mappings: as Lambda's pollers do, receive a queue's messages
 * (a batch of at most the mapping's size), invoke the function synchronously with the SQS event, and
 * delete the batch when the invocation succeeded; after a failure the messages reappear when their
 * visibility timeout ends, and the queue's redrive policy moves them on after maxReceiveCount. A
 * message's delay is the queue's own (the emulator holds it). Lambda long-polls; this polls every
 * `pollMs`, because a long poll would hold one of the emulator's request threads.
 */
import { DeleteMessageBatchCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient, type Message } from '@aws-sdk/client-sqs';

/** An event source mapping of the stack: the function it invokes, the queue it reads, and how many messages per invocation. */
export type QueueMapping = { target: string; queueUrl: string; batchSize: number };

export type QueuePollerOptions = {
  mappings: QueueMapping[];
  endpoint: string;
  region: string;
  /** Invokes `target` synchronously; true when the function returned without an error. */
  invoke(target: string, payload: Buffer): Promise<boolean>;
  pollMs?: number;
};

/** Starts polling every mapping's queue; `stop` ends the polls and waits for the invocations under way. */
export function startQueuePollers(o: QueuePollerOptions): { stop(): Promise<void> } {
  const sqs = new SQSClient({ endpoint: o.endpoint, region: o.region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  const running = new Set<Promise<void>>();
  let stopped = false;
  const loops = o.mappings.map(async (m) => {
    const arn = await queueArn(sqs, m.queueUrl);
    while (!stopped) {
      const received = await sqs
        .send(new ReceiveMessageCommand({ QueueUrl: m.queueUrl, MaxNumberOfMessages: Math.min(10, m.batchSize), WaitTimeSeconds: 0 }))
        .catch(() => undefined);
      const messages = received?.Messages ?? [];
      if (messages.length === 0) {
        await new Promise((r) => setTimeout(r, o.pollMs ?? 100));
        continue;
      }
      // Each batch is an invocation of its own, run side by side as Lambda's pollers run them.
      const p = deliver(sqs, o, m, arn, messages).finally(() => running.delete(p));
      running.add(p);
    }
  });
  return {
    async stop() {
      stopped = true;
      await Promise.all(loops);
      while (running.size) await Promise.all([...running]);
      sqs.destroy();
    },
  };
}

async function queueArn(sqs: SQSClient, queueUrl: string): Promise<string> {
  const res = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
  return res.Attributes?.QueueArn ?? queueUrl;
}

/** One invocation with the messages' SQS event; deletes them when it succeeded. */
async function deliver(sqs: SQSClient, o: QueuePollerOptions, m: QueueMapping, arn: string, messages: Message[]): Promise<void> {
  const event = { Records: messages.map((msg) => sqsRecord(msg, arn, o.region)) };
  const ok = await o.invoke(m.target, Buffer.from(JSON.stringify(event))).catch(() => false);
  if (!ok) return;
  await sqs
    .send(
      new DeleteMessageBatchCommand({
        QueueUrl: m.queueUrl,
        Entries: messages.map((msg, i) => ({ Id: String(i), ReceiptHandle: msg.ReceiptHandle })),
      }),
    )
    .catch(() => undefined);
}

/** A record of Lambda's SQS event (docs: "Using Lambda with Amazon SQS", the example event). */
function sqsRecord(msg: Message, arn: string, region: string) {
  return {
    messageId: msg.MessageId,
    receiptHandle: msg.ReceiptHandle,
    body: msg.Body,
    attributes: msg.Attributes ?? {},
    messageAttributes: msg.MessageAttributes ?? {},
    md5OfBody: msg.MD5OfBody,
    eventSource: 'aws:sqs',
    eventSourceARN: arn,
    awsRegion: region,
  };
}
