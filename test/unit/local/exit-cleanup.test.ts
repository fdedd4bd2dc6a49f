/** Clean-ups that run however a tool ends: after its work, or first thing on Ctrl-C / SIGTERM, once either way. */
import { EventEmitter } from 'node:events';
import { cleanUpOnSignals, createExitCleanups } from '../../../lib/local/exit-cleanup';

/** A promise and the function that settles it: work that runs until the test says it is done. */
function gate(): { done: Promise<void>; open(): void } {
  let open = (): void => undefined;
  const done = new Promise<void>((r) => (open = r));
  return { done, open };
}

function setup() {
  const cleanups = createExitCleanups();
  const proc = new EventEmitter();
  const log: string[] = [];
  const exits: number[] = [];
  const signals = cleanUpOnSignals(
    cleanups,
    proc,
    (l) => log.push(l),
    (code) => exits.push(code),
  );
  return { cleanups, proc, log, exits, signals };
}

describe('exit clean-ups', () => {
  it('run after the work, also when it throws, and are no longer pending once they ran', async () => {
    const t = setup();
    const ran: string[] = [];
    await expect(
      t.cleanups.around(
        async () => void ran.push('ok'),
        async () => 42,
      ),
    ).resolves.toBe(42);
    await expect(
      t.cleanups.around(
        async () => void ran.push('failed'),
        async () => {
          throw new Error('boom');
        },
      ),
    ).rejects.toThrow('boom');
    await t.cleanups.runPending();
    expect(ran).toEqual(['ok', 'failed']);
  });

  it('on a signal: run the pending ones newest first, once (the work finishing later does not run them again), then exit 130', async () => {
    const t = setup();
    const ran: string[] = [];
    const outer = gate();
    const inner = gate();
    const running = t.cleanups.around(
      async () => void ran.push('outer'),
      () =>
        t.cleanups
          .around(
            async () => void ran.push('inner'),
            () => inner.done,
          )
          .then(() => outer.done),
    );
    t.proc.emit('SIGTERM');
    expect(t.signals.interrupted()).toBe(true);
    expect(t.log).toEqual(['SIGTERM: cleaning up before exiting (again to exit at once)']);
    await new Promise((r) => setImmediate(r));
    expect(ran).toEqual(['inner', 'outer']);
    expect(t.exits).toEqual([130]);
    inner.open();
    outer.open();
    await running;
    expect(ran).toEqual(['inner', 'outer']);
  });

  it('a second signal exits at once, without waiting for the clean-up', async () => {
    const t = setup();
    const slow = gate();
    const work = gate();
    const running = t.cleanups.around(
      () => slow.done,
      () => work.done,
    );
    t.proc.emit('SIGINT');
    await new Promise((r) => setImmediate(r));
    expect(t.exits).toEqual([]);
    t.proc.emit('SIGINT');
    expect(t.exits).toEqual([130]);
    expect(t.log.at(-1)).toBe('SIGINT again: exiting without finishing the clean-up');
    slow.open();
    work.open();
    await running;
  });

  it('without a signal, nothing is interrupted and nothing exits', async () => {
    const t = setup();
    await t.cleanups.around(
      async () => undefined,
      async () => undefined,
    );
    expect(t.signals.interrupted()).toBe(false);
    expect(t.exits).toEqual([]);
  });
});
