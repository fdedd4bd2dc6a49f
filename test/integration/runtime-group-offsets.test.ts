/**
 * The Lambda runtime's group offset commits (streams with `consumerGroup`) across warm invocations:
 * a topic of the stream deleted meanwhile must not stop the commits for the others.
 */
import { parseStreamConfig } from '../../lib/config/schema';
import { awsRuntime, resetAwsRuntime } from '../../lib/runtime/aws';
import { createTopicsReady, testKafka, uniqueName } from '../support/env';

const kafka = testKafka('runtime-group-it');
const admin = kafka.admin();
const saved = { ...process.env };
const id = uniqueName('rtg');
const group = uniqueName('rtg-group');
const [gone, kept] = [`${id}-gone`, `${id}-kept`];

beforeAll(async () => {
  await admin.connect();
  await createTopicsReady(admin, [{ topic: gone }, { topic: kept }]);
  const producer = kafka.producer();
  await producer.connect();
  for (const topic of [gone, kept]) await producer.send({ topic, messages: [{ value: 'a' }, { value: 'b' }] });
  await producer.disconnect();
  const streams = [{ id, kafka: { brokers: process.env.KAFKA_BROKERS!.split(',') }, topicPattern: `${id}-.*`, consumerGroup: group }];
  process.env.STREAMS_CONFIG = JSON.stringify({ ledgerTable: uniqueName('rtg-ledger'), streams });
  await resetAwsRuntime();
});
afterAll(async () => {
  process.env = saved;
  await resetAwsRuntime();
  await admin.disconnect();
});

it('keeps committing group offsets after a topic it committed for was deleted', async () => {
  const rt = awsRuntime();
  const stream = parseStreamConfig(JSON.parse(process.env.STREAMS_CONFIG!).streams[0], 'test');
  await rt.commitGroupOffset(stream, group, gone, 0, 1);
  await admin.deleteTopics({ topics: [gone] });
  // kafkajs's admin keeps `gone` among the topics it refreshes metadata for.
  await rt.commitGroupOffset(stream, group, kept, 0, 2);
  const [offsets] = await admin.fetchOffsets({ groupId: group, topics: [kept] });
  expect(offsets?.partitions).toEqual([expect.objectContaining({ partition: 0, offset: '2' })]);
}, 60_000);
