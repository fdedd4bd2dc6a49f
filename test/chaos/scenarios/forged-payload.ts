/**
 * forged-payload: for every range just dispatched, three payloads naming its `from` with a wrong
 * `until` are sent before the genuine invocations; each must be refused with ValidationError and
 * change nothing in the ledger.
 */
import type { StreamConfig } from '../../../lib/config/schema';
import { ValidationError } from '../../../lib/errors';
import type { RecordsHandler } from '../../../lib/processor/handler-api';
import { processRange } from '../../../lib/processor/process-range';
import type { Ledger } from '../../../lib/ports/ledger';
import type { RangeReader } from '../../../lib/ports/range-reader';
import type { RangePayload } from '../../../lib/ranges';
import type { ChaosEnv } from '../env';
import type { RoundScenario } from '../scenario';
import { readLedgerSnapshot } from '../snapshot.dynamodb';

type ForgeTally = { sent: number; refused: number; otherOutcomes: string[]; roundsChanged: number; rounds: number };

/**
 * forged-payload: sends, for every range just dispatched, three payloads naming its `from` with a
 * wrong `until` (one past it, far past it, inside it), one at a time, and compares a full scan of
 * both streams' ledger items before and after: a forgery must be refused and change nothing.
 */
async function sendForgedPayloads(
  env: ChaosEnv,
  ledger: Ledger,
  queue: Array<{ stream: StreamConfig; range: RangePayload }>,
  tally: ForgeTally,
): Promise<void> {
  const scan = async () =>
    JSON.stringify(
      await Promise.all([...new Set(queue.map((q) => q.stream.id))].sort().map((s) => readLedgerSnapshot(env.ddb, env.ledgerTable, s))),
    );
  const before = await scan();
  const untouchable: RangeReader = {
    read: () => {
      throw new Error('a forged payload reached the reader');
    },
    close: async () => undefined,
  } as unknown as RangeReader;
  const refuse: RecordsHandler = {
    mode: 'at-least-once',
    handle: () => {
      throw new Error('a forged payload reached the handler');
    },
  };
  for (const { stream, range } of queue) {
    const wrong = [range.until + 1, range.until + 1_000_000, range.from + 1 === range.until ? range.until + 2 : range.from + 1];
    for (const until of wrong) {
      tally.sent++;
      try {
        const res = await processRange(
          { ledger, readerFor: async () => untouchable, handlerFor: () => refuse },
          { stream, range: { ...range, until }, deadlineAtMs: Date.now() + 60_000 },
        );
        tally.otherOutcomes.push(`${range.topic}/${range.partition} [${range.from}, ${until}): ${res.status}`);
      } catch (err) {
        if (err instanceof ValidationError) tally.refused++;
        else tally.otherOutcomes.push(`${range.topic}/${range.partition} [${range.from}, ${until}): ${(err as Error).message}`);
      }
    }
  }
  tally.rounds++;
  if ((await scan()) !== before) tally.roundsChanged++;
}

export const forgedPayload = (): RoundScenario => {
  const forge: ForgeTally = { sent: 0, refused: 0, otherOutcomes: [], roundsChanged: 0, rounds: 0 };
  return {
    // Before payloads were checked by the lease write, three forgeries exhausted a range.
    knobs: (base) => ({ config: { ...base.config, maxAttempts: 3 } }),
    afterPlan: (run, queue) => sendForgedPayloads(run.env, run.ledger, queue, forge),
    finish(run) {
      const f = forge;
      run.injected = `${f.sent} forged payloads (a planned from with a wrong until, 3 per dispatched range, maxAttempts 3) sent before the genuine invocations: ${f.refused} refused with ValidationError; a full ledger scan before and after them equal in ${f.rounds - f.roundsChanged} of ${f.rounds} rounds`;
      if (f.refused !== f.sent)
        run.problems.push(`${f.sent - f.refused} forged payloads were not refused: ${f.otherOutcomes.slice(0, 3).join('; ')}`);
      if (f.roundsChanged) run.problems.push(`forged payloads changed the ledger in ${f.roundsChanged} rounds`);
      if (!f.sent) run.problems.push('no payload was forged');
    },
  };
};
