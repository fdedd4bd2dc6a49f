/** A Lambda container whose clock runs ahead of the store's, for clock-skew tests of the handlers. */
import { resetAwsRuntime } from '../../lib/runtime/aws';

/**
 * Runs `fn` in a fresh container (the AWS runtime reset) whose Date runs `aheadMs` ahead from its
 * first request on, then restores the real clock and resets the runtime again.
 */
export async function withClockAhead<T>(aheadMs: number, fn: () => Promise<T>): Promise<T> {
  await resetAwsRuntime();
  // Only Date is faked: timers and sockets stay real, so the SDK and kafkajs work as they would.
  jest.useFakeTimers({
    now: Date.now() + aheadMs,
    advanceTimers: true,
    doNotFake: [
      'nextTick',
      'setImmediate',
      'clearImmediate',
      'setTimeout',
      'clearTimeout',
      'setInterval',
      'clearInterval',
      'queueMicrotask',
      'hrtime',
      'performance',
    ],
  });
  try {
    return await fn();
  } finally {
    jest.useRealTimers();
    await resetAwsRuntime();
  }
}
