/**
 * Runs `fn` over `items` with at most `limit` calls in flight; results keep input order. After a
 * call fails no new call starts, and the promise rejects with the first failure once the calls in
 * flight have settled (nothing is left running behind the caller).
 */
export async function mapWithConcurrency<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let failure: { err: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (next < items.length && !failure) {
      const i = next++;
      try {
        out[i] = await fn(items[i] as T);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
  if (failure) throw failure.err;
  return out;
}
