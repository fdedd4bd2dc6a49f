import { getEventListeners } from 'node:events';
import { pause } from '../../../lib/local/session';

describe('pause', () => {
  it('leaves no abort listener behind once its time is up (a long run waits thousands of times on one signal)', async () => {
    const stop = new AbortController();
    for (let i = 0; i < 25; i++) await pause(1, stop.signal);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  });

  it('returns once the signal aborts, before its time is up, without throwing', async () => {
    const stop = new AbortController();
    let done = false;
    const waiting = pause(60_000, stop.signal).then(() => (done = true));
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    stop.abort();
    await waiting;
    expect(done).toBe(true);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  });

  it('waits its time without a signal', async () => {
    await expect(pause(1)).resolves.toBeUndefined();
  });
});
