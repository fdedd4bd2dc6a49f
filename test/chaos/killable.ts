/** The chaos scenarios' process kill, as the ledger sees it. */
import { StoreError } from '../../lib/errors';
import type { Ledger } from '../../lib/ports/ledger';

/**
 * `ledger`, except that every call fails (a rejected StoreError, as a request that never reached
 * the store) once `dead.v` is set: the process was killed, so nothing more it sends is written.
 */
export function killable(ledger: Ledger, dead: { v: boolean }): Ledger {
  return new Proxy(ledger, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        if (dead.v) return Promise.reject(new StoreError('chaos: the process was killed'));
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

const never = new Promise<never>(() => undefined);

/**
 * `target`, killed as a process is by SIGKILL once `dead.v` is set: no call it makes after that ever
 * returns, and a call in flight at the kill (its request may still reach the store) never returns
 * either. A planner loop killed mid-loop holds its leases until they expire.
 */
export function hangsWhenDead<T extends object>(target: T, dead: { v: boolean }): T {
  return new Proxy(target, {
    get(t, prop, receiver) {
      const v = Reflect.get(t, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        if (dead.v) return never;
        return Promise.resolve((v as (...a: unknown[]) => unknown).apply(t, args)).then(
          (res) => (dead.v ? never : res),
          (err: unknown) => (dead.v ? never : Promise.reject(err)),
        );
      };
    },
  });
}
