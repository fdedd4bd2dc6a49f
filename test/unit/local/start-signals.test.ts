/** `npm start`'s Ctrl-C: acknowledged at once during start-up; clean stop, then abort, once running. */
import { EventEmitter } from 'node:events';
import { handleStartSignals } from '../../../lib/local/signals';

function setup() {
  const proc = new EventEmitter();
  const err: string[] = [];
  const exits: number[] = [];
  const signals = handleStartSignals(
    proc,
    (s) => err.push(s),
    (code) => exits.push(code),
  );
  return { proc, err, exits, signals };
}

describe('npm start signals', () => {
  it('during start-up: the first Ctrl-C prints that it is stopping at once, the second exits 130', () => {
    const t = setup();
    t.proc.emit('SIGINT');
    expect(t.signals.stop.aborted).toBe(true);
    expect(t.err.join('')).toBe('\nstopping: interrupted during start-up; exiting after the current step (Ctrl-C again to exit now)\n');
    expect(t.exits).toEqual([]);
    t.proc.emit('SIGINT');
    expect(t.exits).toEqual([130]);
    expect(t.signals.hard.aborted).toBe(false);
  });

  it('once running: the first signal stops cleanly (the demo reports it), the second aborts the processors', () => {
    const t = setup();
    t.signals.running();
    t.proc.emit('SIGTERM');
    expect(t.signals.stop.aborted).toBe(true);
    expect(t.err).toEqual([]);
    t.proc.emit('SIGINT');
    expect(t.signals.hard.aborted).toBe(true);
    expect(t.exits).toEqual([]);
  });
});
