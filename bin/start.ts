/**
 * `npm start`: the main job on the embedded local stack. Until the local runtime (planner +
 * processors in-process) lands, this is a minimal end-to-end demo: it starts (or reuses) the local
 * Kafka broker and DynamoDB emulator, produces keyed events to a 3-partition topic, reads the offsets
 * the planner would clamp, and records them in DynamoDB with a conditional write.
 */
import { CreateTableCommand, PutItemCommand, ResourceInUseException } from '@aws-sdk/client-dynamodb';
import { Kafka, logLevel } from 'kafkajs';
import { emulatorClient } from '../infra/local/dynamodb';
import { upPersistent } from '../infra/local/stack';

async function main(): Promise<void> {
  const log = (line: string): void => {
    process.stderr.write(`[start] ${line}\n`);
  };
  const stack = await upPersistent(log);
  const brokers = process.env.KAFKA_BROKERS ?? stack.kafkaBrokers;
  const endpoint = process.env.DYNAMODB_ENDPOINT ?? stack.dynamodbEndpoint;
  const kafka = new Kafka({ clientId: 'demo', brokers: [brokers], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const producer = kafka.producer();
  await admin.connect();
  await producer.connect();
  const topic = 'demo-events';
  if (!(await admin.listTopics()).includes(topic)) {
    await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });
  }
  const messages = Array.from({ length: 1000 }, (_, i) => ({ key: `user-${i % 17}`, value: JSON.stringify({ i, at: Date.now() }) }));
  await producer.send({ topic, messages });
  const offsets = await admin.fetchTopicOffsets(topic);
  await producer.disconnect();
  await admin.disconnect();

  const ddb = emulatorClient(endpoint);
  await ddb
    .send(
      new CreateTableCommand({
        TableName: 'demo-ledger',
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      }),
    )
    .catch((e: unknown) => {
      if (!(e instanceof ResourceInUseException)) throw e;
    });
  for (const o of offsets) {
    await ddb.send(
      new PutItemCommand({
        TableName: 'demo-ledger',
        Item: { pk: { S: `${topic}/${o.partition}` }, latest: { N: o.high }, earliest: { N: o.low } },
      }),
    );
  }
  ddb.destroy();
  for (const o of offsets) log(`${topic}/${o.partition}: earliest ${o.low}, latest ${o.high}`);
  log('the stack keeps running; stop it with: npm run local:down');
}

main().catch((err: unknown) => {
  process.stderr.write(`[start] error: ${(err as Error)?.message ?? String(err)}\n`);
  process.exitCode = 1;
});
