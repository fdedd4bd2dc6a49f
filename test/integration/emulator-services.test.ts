/**
 * The local emulator (moto in server mode, infra/local/dynamodb/moto_server.py) serves more than
 * DynamoDB on its one endpoint: the AWS Glue Schema Registry, SQS, SNS and S3, over their real wire
 * protocols, through the AWS SDK clients the engine uses. The emulator serves one request at a time,
 * so every receive here is a short poll (WaitTimeSeconds 0): a long poll would hold every other
 * client of the emulator for its whole wait.
 */
import {
  CreateRegistryCommand,
  CreateSchemaCommand,
  DeleteRegistryCommand,
  GetSchemaByDefinitionCommand,
  GetSchemaVersionCommand,
  GlueClient,
  RegisterSchemaVersionCommand,
} from '@aws-sdk/client-glue';
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { CreateTopicCommand, DeleteTopicCommand, PublishCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import { emulatorClientConfig, uniqueName } from '../support/env';
import { waitFor } from '../support/wait-for';

const avroV1 = JSON.stringify({ type: 'record', name: 'Payment', namespace: 'test', fields: [{ name: 'id', type: 'string' }] });
// Adds a field with a default: a BACKWARD-compatible second version.
const avroV2 = JSON.stringify({
  type: 'record',
  name: 'Payment',
  namespace: 'test',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'cents', type: 'long', default: 0 },
  ],
});
const jsonSchema = JSON.stringify({ type: 'object', properties: { id: { type: 'string' } }, required: ['id'] });
const protoSchema = 'syntax = "proto3";\npackage test;\nmessage Payment {\n  string id = 1;\n}\n';

/** Short polls until `count` messages arrived (each receive returns at once); fails past `timeoutMs`. */
async function receive(sqs: SQSClient, queueUrl: string, count: number, timeoutMs = 10_000): Promise<Message[]> {
  const got: Message[] = [];
  const more = async (): Promise<number> => {
    const res = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
    got.push(...(res.Messages ?? []));
    return got.length;
  };
  await waitFor(`${count} messages from ${queueUrl}`, more, { until: (n) => n >= count, timeoutMs });
  return got;
}

describe('emulator services beside DynamoDB', () => {
  const config = emulatorClientConfig();

  describe('Glue Schema Registry', () => {
    const glue = new GlueClient(config);
    const registry = uniqueName('registry');
    beforeAll(async () => {
      await glue.send(new CreateRegistryCommand({ RegistryName: registry }));
    });
    afterAll(async () => {
      await glue.send(new DeleteRegistryCommand({ RegistryId: { RegistryName: registry } }));
      glue.destroy();
    });

    it('registers an Avro schema and a compatible second version, found by id and by definition', async () => {
      const created = await glue.send(
        new CreateSchemaCommand({
          RegistryId: { RegistryName: registry },
          SchemaName: 'payments-avro',
          DataFormat: 'AVRO',
          Compatibility: 'BACKWARD',
          SchemaDefinition: avroV1,
        }),
      );
      expect(created.SchemaVersionId).toMatch(/^[0-9a-f-]{36}$/);
      expect(created.SchemaVersionStatus).toBe('AVAILABLE');

      const schemaId = { RegistryName: registry, SchemaName: 'payments-avro' };
      const v2 = await glue.send(new RegisterSchemaVersionCommand({ SchemaId: schemaId, SchemaDefinition: avroV2 }));
      expect(v2.VersionNumber).toBe(2);
      expect(v2.SchemaVersionId).not.toBe(created.SchemaVersionId);

      const byId = await glue.send(new GetSchemaVersionCommand({ SchemaVersionId: v2.SchemaVersionId }));
      expect(byId).toMatchObject({ DataFormat: 'AVRO', VersionNumber: 2, Status: 'AVAILABLE' });
      expect(JSON.parse(byId.SchemaDefinition ?? '')).toEqual(JSON.parse(avroV2));

      const byDefinition = await glue.send(new GetSchemaByDefinitionCommand({ SchemaId: schemaId, SchemaDefinition: avroV1 }));
      expect(byDefinition.SchemaVersionId).toBe(created.SchemaVersionId);
      expect(byDefinition.DataFormat).toBe('AVRO');
    });

    it.each([
      ['JSON', jsonSchema],
      ['PROTOBUF', protoSchema],
    ] as const)('registers a %s schema and serves its definition by version id', async (format, definition) => {
      const created = await glue.send(
        new CreateSchemaCommand({
          RegistryId: { RegistryName: registry },
          SchemaName: `payments-${format.toLowerCase()}`,
          DataFormat: format,
          Compatibility: 'NONE',
          SchemaDefinition: definition,
        }),
      );
      const byId = await glue.send(new GetSchemaVersionCommand({ SchemaVersionId: created.SchemaVersionId }));
      expect(byId).toMatchObject({ DataFormat: format, VersionNumber: 1, SchemaDefinition: definition });
    });
  });

  describe('SQS, SNS and S3', () => {
    const sqs = new SQSClient(config);
    const sns = new SNSClient(config);
    const s3 = new S3Client(config);
    afterAll(() => {
      sqs.destroy();
      sns.destroy();
      s3.destroy();
    });

    it('sends to a queue and receives with a short poll', async () => {
      const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: uniqueName('queue') }));
      try {
        await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'record 1' }));
        const got = await receive(sqs, QueueUrl as string, 1);
        expect(got.map((m) => m.Body)).toEqual(['record 1']);
      } finally {
        await sqs.send(new DeleteQueueCommand({ QueueUrl }));
      }
    });

    it('publishes to a topic and delivers to a subscribed queue', async () => {
      const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: uniqueName('subscriber') }));
      const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: uniqueName('topic') }));
      try {
        const attrs = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
        await sns.send(new SubscribeCommand({ TopicArn, Protocol: 'sqs', Endpoint: attrs.Attributes?.QueueArn }));
        const { MessageId } = await sns.send(new PublishCommand({ TopicArn, Message: 'dead letter 1', Subject: 'dlq' }));
        const got = await receive(sqs, QueueUrl as string, 1);
        expect(got).toHaveLength(1);
        // Without raw delivery, the queue holds SNS's JSON envelope around the message.
        expect(JSON.parse(got[0]?.Body ?? '')).toMatchObject({ Type: 'Notification', MessageId, TopicArn, Message: 'dead letter 1' });
      } finally {
        await sns.send(new DeleteTopicCommand({ TopicArn }));
        await sqs.send(new DeleteQueueCommand({ QueueUrl }));
      }
    });

    it('puts and gets an object', async () => {
      const Bucket = uniqueName('bucket');
      await s3.send(new CreateBucketCommand({ Bucket }));
      try {
        const body = Buffer.from([0, 1, 2, 255]);
        await s3.send(new PutObjectCommand({ Bucket, Key: 'batches/1.bin', Body: body, ContentType: 'application/octet-stream' }));
        const got = await s3.send(new GetObjectCommand({ Bucket, Key: 'batches/1.bin' }));
        expect(Buffer.from(await (got.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray())).toEqual(body);
        expect(got.ContentType).toBe('application/octet-stream');
        await s3.send(new DeleteObjectCommand({ Bucket, Key: 'batches/1.bin' }));
      } finally {
        await s3.send(new DeleteBucketCommand({ Bucket }));
      }
    });
  });
});
