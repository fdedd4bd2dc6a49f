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
