/** The deployment config of a local run over one topic: one stream reading it from the earliest offset. */
import type { DeploymentConfigInput, StreamConfigInput } from '../config/schema';

/** The config input (as a file would hold it) of one stream `streamId` over `topic` on `brokers` (comma-separated). */
export function oneTopicConfigInput(p: {
  ledgerTable: string;
  streamId: string;
  brokers: string;
  topic: string;
  triggerIntervalMs: number;
  processor?: StreamConfigInput['processor'];
  handler: StreamConfigInput['handler'];
  continuous?: StreamConfigInput['continuous'];
}): DeploymentConfigInput {
  const stream: StreamConfigInput = {
    id: p.streamId,
    kafka: { brokers: p.brokers.split(',') },
    topics: [p.topic],
    startingOffsets: 'earliest',
    triggerIntervalMs: p.triggerIntervalMs,
    ...(p.processor && { processor: p.processor }),
    ...(p.continuous && { continuous: p.continuous }),
    handler: p.handler,
  };
  return { ledgerTable: p.ledgerTable, streams: [stream] };
}
