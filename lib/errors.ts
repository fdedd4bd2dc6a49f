/**
 * One error hierarchy for the whole project. Adapters translate SDK/client errors into these leaf
 * classes at the edge, keeping the original as `cause`, so callers can branch on the class
 * (throttled vs missing table vs bad input) without knowing which SDK raised it.
 */
export class AppError extends Error {
  /** Stable machine-readable code, e.g. for metrics dimensions and CLI exit messages. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Input (config file, ad hoc payload, CLI argument) failed validation; nothing was changed. */
export class ValidationError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('VALIDATION', message, options);
  }
}

/** A prerequisite of the local stack (Java, Maven, Python, a free port) is missing. */
export class PrerequisiteError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('PREREQUISITE', message, options);
  }
}

/** A bounded wait ran out (service start, broker readiness, ...). */
export class TimeoutError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('TIMEOUT', message, options);
  }
}

/** The store asked us to slow down and the SDK's own retries ran out. */
export class ThrottledError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('THROTTLED', message, options);
  }
}

/** A table (or other resource) the configuration names does not exist. */
export class MissingResourceError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('MISSING_RESOURCE', message, options);
  }
}

/** Concurrent writers kept colliding on the same items beyond our bounded retries. */
export class ConflictError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CONFLICT', message, options);
  }
}

/** The store failed in a way retries did not fix (5xx, network). */
export class StoreError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('STORE', message, options);
  }
}

/** An operation was refused because the current state does not allow it (e.g. ranges in flight); nothing was changed. */
export class PreconditionError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('PRECONDITION', message, options);
  }
}

/** A client lacks a setting it needs from the environment (an AWS region, an endpoint); nothing was changed. */
export class ConfigurationError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CONFIGURATION', message, options);
  }
}

/** AWS credentials a connection needs could not be obtained (an assumed role refused, STS unreachable). */
export class CredentialsError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CREDENTIALS', message, options);
  }
}

/** The secret store could not be read (missing secret, access denied, network, throttling). */
export class SecretUnavailableError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('SECRET_UNAVAILABLE', message, options);
  }
}

export type KafkaErrorDetails = {
  cause?: unknown;
  /** kafkajs protocol error type, e.g. 'UNKNOWN_TOPIC_OR_PARTITION', 'NOT_LEADER_FOR_PARTITION'. */
  type?: string;
  /** Whether retrying the same call later may succeed (kafkajs's own classification). */
  retriable?: boolean;
};

/** A Kafka request failed or returned something the project cannot use. */
export class KafkaError extends AppError {
  /** kafkajs protocol error type ('UNKNOWN_TOPIC_OR_PARTITION', ...) or error name when known. */
  readonly type: string | undefined;
  readonly retriable: boolean;

  constructor(message: string, details: KafkaErrorDetails = {}) {
    super('KAFKA', message, details.cause === undefined ? undefined : { cause: details.cause });
    this.type = details.type;
    this.retriable = details.retriable ?? false;
  }
}

/** A failure destination (SQS, SNS, S3, a Kafka topic) did not take a dead letter; it stays pending in the ledger. */
export class DeliveryError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('DELIVERY', message, options);
  }
}

/**
 * A schema registry could not answer (unreachable, 5xx, throttled, credentials refused): a fault
 * outside the record, so the range attempt fails and is retried; nothing is dead-lettered for it.
 */
export class SchemaRegistryError extends AppError {
  /** The registry settings that may be at fault, relative to the registry object (`confluent.url`, `glue.region`). */
  readonly settings: readonly string[];

  constructor(message: string, options?: { cause?: unknown; settings?: readonly string[] }) {
    super('SCHEMA_REGISTRY', message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.settings = options?.settings ?? [];
  }
}

/**
 * A record's value or key cannot be decoded as its stream says (wrong magic byte, unknown schema id,
 * corrupt payload, a value its schema does not validate): the record is dead-lettered as undecodable.
 */
export class UndecodableError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('UNDECODABLE', message, options);
  }
}
