/** The handler test kit's `secrets` option: test values reach the handler as `ctx.secrets`, on every call. */
import type { AtLeastOnceHandler, HandlerContext } from '../../../lib/processor/handler-api';
import { runHandler } from '../../../lib/testing';

function recording() {
  const seen: Array<HandlerContext['secrets']> = [];
  const handler: AtLeastOnceHandler = { mode: 'at-least-once', handle: (_records, ctx) => void seen.push(ctx.secrets) };
  return { seen, handler };
}

describe('runHandler({ secrets })', () => {
  it('gives the handler the secrets passed, read-only, in every chunk', async () => {
    const { seen, handler } = recording();
    const records = Array.from({ length: 5 }, (_, i) => ({ key: `k${i}`, value: { i } }));
    await runHandler(handler, records, { secrets: { API_TOKEN: 'test-token' }, maxChunkRecords: 2 });
    expect(seen).toHaveLength(3);
    for (const secrets of seen) {
      expect(secrets).toEqual({ API_TOKEN: 'test-token' });
      expect(Object.isFrozen(secrets)).toBe(true);
    }
  });

  it('gives no secrets when none are passed', async () => {
    const { seen, handler } = recording();
    await runHandler(handler, [{ value: 'x' }]);
    expect(seen).toEqual([{}]);
  });

  it('lets a handler that needs a secret fail without it, as the processor would dead-letter its records', async () => {
    const needsToken: AtLeastOnceHandler = {
      mode: 'at-least-once',
      handle: (_records, ctx) => {
        if (!ctx.secrets.API_TOKEN) throw new Error('no API_TOKEN');
      },
    };
    const without = await runHandler(needsToken, [{ value: 'x' }], { stream: { maxAttempts: 1 } });
    expect(without.deadLetters.map((d) => d.error)).toEqual([expect.stringContaining('no API_TOKEN')]);
    const withToken = await runHandler(needsToken, [{ value: 'x' }], { secrets: { API_TOKEN: 't' } });
    expect(withToken.deadLetters).toEqual([]);
  });
});
