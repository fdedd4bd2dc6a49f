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
