/**
 * `kafka-lambda-direct`: what a stream project's handler files import. The handler contract and its
 * helpers, the record and sink-write types, header look-ups, the config types (to type a config built
 * in code) and the config parser, and the error classes handlers and tests may meet. The test kit is
 * `kafka-lambda-direct/testing`.
 */
export {
  foldHandler,
  idempotencyKeyOf,
  sinkItemId,
  type AtLeastOnceHandler,
  type DecodedRecord,
  type ExactlyOnceHandler,
  type FoldingHandler,
  type FoldWrite,
  type HandlerContext,
  type HandlerRecord,
  type ItemFold,
  type RecordsHandler,
  type SchemaRef,
  type SinkItemRef,
} from './processor/handler-api';
export { foldWriteProblem } from './processor/fold-write';
export { headerMap, headerValues, lastHeader, type KafkaRecord, type RecordHeader, type TimestampType } from './ports/range-reader';
export type { SinkCondition, SinkUpdate, SinkWrite } from './ports/sink-write';
export {
  parseDeploymentConfig,
  parseStreamConfig,
  type DeploymentConfig,
  type DeploymentConfigInput,
  type HandlerConfig,
  type KafkaConnectionConfig,
  type SecretRef,
  type StreamConfig,
  type StreamConfigInput,
} from './config/schema';
export { AppError, ValidationError } from './errors';
