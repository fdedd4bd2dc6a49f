/**
 * The network scenarios (issue 42): faults between the system and the services, on the wire, through
 * Toxiproxy (proxied.ts): latency with jitter, a trickle of bandwidth, resets, black holes, and
 * answers that come after the client gave up. Each holds its fault for a while and clears it; the
 * time from the fault's end to the next commit is its recovery figure. Each asserts that its fault
 * fired, from what the system's own clients met (DynamoDB attempts and their errors, kafkajs's
 * connection lines) or from the invocations' own timing.
 */
import { SILENT_CONNECTION_MS } from '../../../lib/connection-limits';
import type { ProcessorStep } from '../../../lib/processor/process-range';
import type { NetworkControl } from '../proxied';
import type { RoundScenario, Run } from '../scenario';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const WRITES = new Set(['UpdateItemCommand', 'PutItemCommand', 'TransactWriteItemsCommand', 'BatchWriteItemCommand', 'DeleteItemCommand']);

/** A ledger write that moved a range on: a chunk's commit, or the completion of a range read to its end. */
const isCommit = (step: ProcessorStep): boolean => step === 'committed' || step === 'completed';

/** When faults start and end, and every commit, for the recovery figure. */
type Timeline = { faults: Array<{ what: string; startMs: number; endMs?: number }>; commits: number[] };

/** The time from the last fault's end to the first commit after it (undefined: no commit came). */
export function recoveryMs(t: Timeline): number | undefined {
  const end = Math.max(...t.faults.map((f) => f.endMs ?? Infinity));
  if (!Number.isFinite(end)) return undefined;
  const next = t.commits.find((c) => c >= end);
  return next === undefined ? undefined : next - end;
}

/** Holds `apply`'s fault for `holdMs` (in the background), then clears both proxies and applies `after` (the scenario's steady faults). */
function hold(net: NetworkControl, t: Timeline, what: string, apply: () => Promise<void>, holdMs: number, after?: () => Promise<void>) {
  const fault: Timeline['faults'][number] = { what, startMs: Date.now() };
  t.faults.push(fault);
  return (async () => {
    await apply();
    await sleep(holdMs);
    await Promise.all([net.kafka.clear(), net.dynamo.clear()]);
    fault.endMs = Date.now();
    await after?.();
  })();
}

const netOf = (run: Run): NetworkControl => {
  if (!run.opts.network) throw new Error('chaos harness: a network scenario runs through the proxies (proxied.ts)');
  return run.opts.network;
};

const recoveryText = (t: Timeline): string => {
  const ms = recoveryMs(t);
  return ms === undefined ? 'no commit after the fault ended' : `next commit ${ms} ms after the fault ended`;
};

/**
 * A fault started at the n-th time an invocation reaches `step` (once per run), awaited before the
 * round ends; `fromRound`: only from that round on (0-based), when the readers' connections are warm.
 */
function onStep(n: number, step: ProcessorStep, start: (run: Run) => Promise<void>, fromRound = 0) {
  let seen = 0;
  let started: Promise<void> | undefined;
  return {
    afterStep(run: Run, s: ProcessorStep) {
      if (s !== step || started || run.tally.rounds < fromRound || ++seen < n) return;
      started = start(run);
      started.catch(() => undefined);
    },
    async settled(run: Run) {
      if (started) await started;
      run.eventDone = started !== undefined;
    },
    get fired() {
      return started !== undefined;
    },
  };
}

/**
 * A Kafka fault held while a Fetch is in flight: a range's Fetch goes out as its lease is taken (the
 * reader prefetches) and the scenario makes the broker's answers 500 ms late, so 60 ms after the
 * second lease taken from the second round on (the readers' connections warm: a first one spends
 * the fault connecting) one is on its way.
 */
function midFetchFault(
  t: Timeline,
  what: string,
  apply: (net: NetworkControl) => Promise<void>,
  holdMs: number,
  after: (net: NetworkControl) => Promise<void>,
) {
  return onStep(
    2,
    'leased',
    async (run) => {
      const net = netOf(run);
      await sleep(60);
      await hold(
        net,
        t,
        what,
        () => apply(net),
        holdMs,
        () => after(net),
      );
    },
    1,
  );
}

/** Hooks every network scenario shares: commits timed, the invocation step times recorded. */
function timed(t: Timeline, extra: { afterStep?(run: Run, s: ProcessorStep): void } = {}): Pick<RoundScenario, 'invocation'> {
  return {
    invocation: (run) => ({
      afterStep(step) {
        if (isCommit(step)) t.commits.push(Date.now());
        extra.afterStep?.(run, step);
      },
    }),
  };
}

/**
 * network-latency: every DynamoDB answer 300 +/- 150 ms late and every Kafka answer 100 +/- 50 ms,
 * for the first rounds; every range is invoked again once its lease (1.5 s) has run out, so a commit
 * still in flight when its lease expired meets an invocation that took the range over.
 */
export const networkLatency = (): RoundScenario => {
  const t: Timeline = { faults: [], commits: [] };
  let lateCommits = 0;
  let latencyOn = false;
  let attemptsBefore = 0;
  let duringMs: number[] = [];
  return {
    knobs: () => ({ perPartition: 150 }),
    hasEvent: true,
    async prepare(run) {
      const net = netOf(run);
      t.faults.push({ what: 'latency', startMs: Date.now() });
      await net.dynamo.latency(300, 150);
      await net.kafka.latency(100, 50);
      latencyOn = true;
      attemptsBefore = net.met.dynamoAttemptMs.length;
    },
    invocation(run) {
      let leasedAtMs = 0;
      const leaseMs = (run.knobs.config.processor as { leaseMs: number }).leaseMs;
      return {
        afterStep(step) {
          if (step === 'leased') leasedAtMs = Date.now();
          if (!isCommit(step)) return;
          t.commits.push(Date.now());
          if (Date.now() > leasedAtMs + leaseMs) lateCommits++;
        },
      };
    },
    async process(q, invoke) {
      const leaseMs = (q.stream.processor.leaseMs as number) + 100;
      await Promise.all([invoke(q.stream, q.range), sleep(leaseMs).then(() => invoke(q.stream, q.range))]);
    },
    async afterRound(run) {
      // The first round late, the rest on time.
      if (!latencyOn) return;
      const net = netOf(run);
      duringMs = net.met.dynamoAttemptMs.slice(attemptsBefore);
      await Promise.all([net.kafka.clear(), net.dynamo.clear()]);
      t.faults[0]!.endMs = Date.now();
      latencyOn = false;
      run.eventDone = true;
    },
    finish(run) {
      const lost = run.tally.statuses['lease-lost'] ?? 0;
      const m = median(duringMs);
      run.injected = `DynamoDB answers 300 +/- 150 ms late and Kafka's 100 +/- 50 ms for the first round (median DynamoDB attempt ${m} ms over ${duringMs.length}); every range invoked again 100 ms after its 1.5 s lease: ${lateCommits} commits landed after their lease had expired (nobody had taken the range), ${lost} invocations found their lease taken over mid-range and stopped; ${recoveryText(t)}`;
      run.recoveryMs = recoveryMs(t);
      if (m < 150) run.problems.push(`the latency did not fire: median DynamoDB attempt ${m} ms`);
      if (lateCommits + lost === 0) run.problems.push('no commit outlived its lease: the latency never stretched a range past it');
    },
  };
};

/** The least a step that waited on a trickled Fetch answer takes: at 1 KB/s a byte costs a millisecond, and an answer with records has hundreds. */
const TRICKLED_STEP_MS = 500;

/** network-trickle: mid-range, the broker's answers trickle at 1 KB/s for 4 s (handlers slowed, so ranges are mid-read). */
export const networkTrickle = (): RoundScenario => {
  const t: Timeline = { faults: [], commits: [] };
  const gaps: Array<{ atMs: number; gapMs: number }> = [];
  const trickle = onStep(2, 'handled', (run) => {
    const net = netOf(run);
    return hold(net, t, 'trickle', () => net.kafka.bandwidth(1), 4_000);
  });
  return {
    knobs: () => ({ perPartition: 120, handlerDelayMs: 30 }),
    hasEvent: true,
    invocation(run) {
      let lastMs = Date.now();
      return {
        afterStep(step) {
          const now = Date.now();
          gaps.push({ atMs: now, gapMs: now - lastMs });
          lastMs = now;
          if (isCommit(step)) t.commits.push(now);
          trickle.afterStep(run, step);
        },
      };
    },
    afterRound: (run) => trickle.settled(run),
    finish(run) {
      const f = t.faults[0];
      const during = (g: { atMs: number }) => f !== undefined && g.atMs >= f.startMs && g.atMs <= (f.endMs ?? Infinity) + 5_000;
      const slowest = Math.max(0, ...gaps.filter(during).map((g) => g.gapMs));
      const typicalMs = median(gaps.filter((g) => !during(g)).map((g) => g.gapMs));
      run.injected = `broker answers cut to 1 KB/s for 4 s mid-range: the slowest step of a range reading then took ${slowest} ms (a step outside the fault ${typicalMs} ms at the median); ${recoveryText(t)}`;
      run.recoveryMs = recoveryMs(t);
      // A step that waited on a trickled answer takes half a second or more (usually the whole 4 s; under
      // load, when most of a round's answers were in before the trickle began, less), many times a step's usual time.
      if (!trickle.fired) run.problems.push('the trickle never started');
      else if (slowest < Math.max(TRICKLED_STEP_MS, 5 * typicalMs))
        run.problems.push(`the trickle slowed no read (slowest step ${slowest} ms during it, ${typicalMs} ms at the median outside)`);
    },
  };
};

/** network-reset: connections reset (RST) while a Fetch is in flight and while a commit is (the answers come late, so both are in flight a while). */
export const networkReset = (): RoundScenario => {
  const t: Timeline = { faults: [], commits: [] };
  const steady = async (net: NetworkControl) => {
    await net.kafka.latency(500);
    await net.dynamo.latency(150);
  };
  const midFetch = midFetchFault(
    t,
    'reset mid-Fetch',
    (net) => net.kafka.reset(),
    300,
    (net) => (midCommit.fired ? Promise.resolve() : steady(net)),
  );
  const midCommit = onStep(1, 'sink-written', async (run) => {
    const net = netOf(run);
    await sleep(50);
    await hold(
      net,
      t,
      'reset mid-commit',
      () => net.dynamo.reset(),
      300,
      () => (midFetch.fired ? Promise.resolve() : steady(net)),
    );
  });
  return {
    hasEvent: true,
    prepare: (run) => steady(netOf(run)),
    ...timed(t, {
      afterStep(run, s) {
        midFetch.afterStep(run, s);
        midCommit.afterStep(run, s);
      },
    }),
    async afterRound(run) {
      await midFetch.settled(run);
      const fetchDone = run.eventDone;
      await midCommit.settled(run);
      run.eventDone = fetchDone && run.eventDone;
    },
    finish(run) {
      const net = netOf(run);
      const kafkaResets = net.met.kafkaLines.filter((l) => /ECONNRESET|connection error|closed connection|EPIPE/i.test(l)).length;
      const dynamoResets = net.met.dynamoFailed.filter((f) => /ECONNRESET|EPIPE|socket hang up/i.test(f.error)).length;
      run.injected = `connections reset mid-Fetch (kafkajs reported ${kafkaResets} connection errors) and mid-commit (${dynamoResets} DynamoDB attempts failed on the reset and were sent again), Kafka's answers 500 ms late and DynamoDB's 150 ms until both had fired; ${recoveryText(t)}`;
      run.recoveryMs = recoveryMs(t);
      if (!kafkaResets) run.problems.push('no Kafka connection was reset (the reset mid-Fetch did not fire)');
      if (!dynamoResets) run.problems.push('no DynamoDB request was reset (the reset mid-commit did not fire)');
    },
  };
};

/**
 * network-black-hole: mid-Fetch, the broker's connections stop carrying anything (no reset) for 5 s;
 * later, between rounds, both services' idle connections do, for 6 s, and the next round starts into it.
 */
export const networkBlackHole = (): RoundScenario => {
  const t: Timeline = { faults: [], commits: [] };
  let idle: Promise<void> | undefined;
  const midFetch = midFetchFault(
    t,
    'black hole mid-Fetch',
    (net) => net.kafka.blackHole(),
    5_000,
    (net) => net.kafka.latency(500),
  );
  return {
    knobs: () => ({ perPartition: 120 }),
    hasEvent: true,
    // A range's Fetch goes out as its lease is taken (the reader prefetches), and its answer is 500 ms late.
    prepare: (run) => netOf(run).kafka.latency(500),
    ...timed(t, { afterStep: (run, s) => midFetch.afterStep(run, s) }),
    async afterRound(run) {
      await midFetch.settled(run);
      if (!run.eventDone) return;
      if (!idle) {
        run.eventDone = false;
        const net = netOf(run);
        // Not awaited: the next round's planner and processors run into it.
        idle = hold(
          net,
          t,
          'black hole on idle connections',
          async () => {
            await net.kafka.blackHole();
            await net.dynamo.blackHole();
          },
          6_000,
        );
        idle.catch(() => undefined);
        return;
      }
      await idle;
      run.eventDone = true;
    },
    finish(run) {
      const net = netOf(run);
      const count = (re: RegExp) => net.met.kafkaLines.filter((l) => re.test(l)).length;
      const silent = count(/no answer from/);
      const withIt = count(/closed with another connection that went silent/);
      const connects = count(/connection timeout/i);
      const timedOut = net.met.dynamoFailed.filter((f) => f.error === 'TimeoutError').length;
      run.injected = `a black hole (nothing passes, nothing closes) on the broker's connections for 5 s mid-Fetch, then on both services' idle connections for 6 s: Kafka connections closed after ${SILENT_CONNECTION_MS} ms of silence: ${silent} (and ${withIt} idle ones with them), connects timed out: ${connects}; DynamoDB attempts timed out: ${timedOut}; ${run.tally.processorErrors} processor invocations and ${run.tally.plannerFailures} planner runs failed and were retried; ${recoveryText(t)}`;
      run.recoveryMs = recoveryMs(t);
      // However the hole is met first (a request on an open connection, or a connection opened into it), a limit must end the wait.
      if (!silent && !withIt && !connects) run.problems.push('no Kafka connection met the black hole (none went silent or timed out)');
      if (!timedOut) run.problems.push('no DynamoDB request timed out (the idle black hole did not fire)');
    },
  };
};

/**
 * late-response: mid-commit, DynamoDB's answers come 4.5 s late for 4 s, past the clients' 3 s
 * silence limit; the writes themselves land at once (only answers are late), so every resend meets
 * a write already applied.
 */
export const lateResponse = (): RoundScenario => {
  const t: Timeline = { faults: [], commits: [] };
  const late = onStep(1, 'sink-written', (run) => {
    const net = netOf(run);
    return hold(net, t, 'late answers', () => net.dynamo.latency(SILENT_CONNECTION_MS + 1_500), 4_000);
  });
  return {
    hasEvent: true,
    ...timed(t, { afterStep: (run, s) => late.afterStep(run, s) }),
    afterRound: (run) => late.settled(run),
    finish(run) {
      const net = netOf(run);
      const writes = net.met.dynamoFailed.filter((f) => f.error === 'TimeoutError' && WRITES.has(f.command));
      run.injected = `DynamoDB's answers ${SILENT_CONNECTION_MS + 1_500} ms late for 4 s mid-commit (requests delivered at once): ${writes.length} writes timed out after landing (${[...new Set(writes.map((w) => w.command.replace('Command', '')))].join(', ')}) and were sent again or their range retried; ${recoveryText(t)}`;
      run.recoveryMs = recoveryMs(t);
      if (!writes.length) run.problems.push('no write timed out (the late answers did not fire)');
    },
  };
};
