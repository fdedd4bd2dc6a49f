/**
 * Live progress of the local runtime: a table redrawn in place about once a second on a terminal
 * (plain ANSI: cursor up, clear to end), or one log line every few seconds when output is not a
 * terminal or is JSON.
 */
import { duration, table } from '../ops/format';
import { doneCell, renderInFlight, renderWriting, type InFlightProgress } from '../ops/in-flight';

export type PartitionProgress = {
  topic: string;
  partition: number;
  /** Undefined until the planner registered the partition. */
  committed?: number;
  /** The partition's earliest offset: where an unregistered partition's lag counts from. */
  earliest?: number;
  latest?: number;
  /** latest - committed (latest - earliest until the partition is registered). */
  lag?: number;
  /** Committed records per second over the last few seconds. */
  recordsPerSec?: number;
  inFlight: number;
  /** Offsets done inside the partition's ranges in flight, of those they span (the processors' progress). */
  inFlightDone?: number;
  inFlightOffsets?: number;
};

export type ProgressFrame = {
  elapsedMs: number;
  stream: string;
  phase: string;
  /**
   * Records this run produced (the demo's producer); absent where the run produces nothing (a config
   * run reads topics others write), so no line claims records it did not produce.
   */
  produced?: number;
  producedPerSec?: number;
  partitions: PartitionProgress[];
  invocations: number;
  plannerRuns: number;
  inFlight: number;
  /** Progress inside the stream's ranges in flight, as the ledger has it. */
  inFlightProgress?: InFlightProgress;
  deadLetters: number;
  errors: number;
  lastError?: string;
  /** Recent notable events (partition added, stopping, ...), newest last. */
  events: string[];
};

/** Lag of one partition: latest - committed, counted from earliest while it is not registered (never 0 by default). */
function partitionLag(p: Pick<PartitionProgress, 'committed' | 'earliest' | 'latest' | 'lag'>): number | undefined {
  if (p.latest === undefined) return p.lag;
  return Math.max(0, p.latest - (p.committed ?? p.earliest ?? 0));
}

/** Totals of a frame: the header's figures (lag = latest - committed, summed over what the table shows). */
function frameTotals(f: Pick<ProgressFrame, 'partitions'>): {
  partitions: number;
  unregistered: number;
  latest: number;
  committed: number;
  lag: number;
  ratePerSec: number;
} {
  let latest = 0;
  let committed = 0;
  let lag = 0;
  let ratePerSec = 0;
  let unregistered = 0;
  for (const p of f.partitions) {
    if (p.committed === undefined) unregistered += 1;
    latest += p.latest ?? 0;
    committed += p.committed ?? p.earliest ?? 0;
    lag += partitionLag(p) ?? 0;
    ratePerSec += p.recordsPerSec ?? 0;
  }
  return { partitions: f.partitions.length, unregistered, latest, committed, lag, ratePerSec };
}

/** The terminal view's `produced N (R/s)` lead, or nothing when the run produces nothing. */
function producedText(f: Pick<ProgressFrame, 'produced' | 'producedPerSec'>): string {
  return f.produced === undefined ? '' : `produced ${f.produced} (${Math.round(f.producedPerSec ?? 0)}/s)   `;
}

/** The frame as lines of text (the terminal view). */
export function renderFrame(f: ProgressFrame): string[] {
  const t = frameTotals(f);
  const unregistered = t.unregistered ? ` (${t.unregistered} not registered yet)` : '';
  const parts = `${t.partitions} partition${t.partitions === 1 ? '' : 's'}${unregistered}`;
  const stopHint = f.phase === 'stopping' ? '(Ctrl-C again: abort at a chunk boundary)' : '(Ctrl-C stops cleanly)';
  const lines = [
    `stream ${f.stream}  ${f.phase}  ${duration(f.elapsedMs)}  ${parts}   ${stopHint}`,
    `${producedText(f)}latest ${t.latest}   committed ${t.committed}   lag ${t.lag}   ${Math.round(t.ratePerSec)} records/s`,
    `ranges in flight ${f.inFlight}   processor invocations ${f.invocations}   planner runs ${f.plannerRuns}`,
    ...(f.inFlightProgress?.ranges
      ? [renderInFlight(f.inFlightProgress), ...f.inFlightProgress.writing.slice(0, 3).map((w) => `  ${renderWriting(w)}`)]
      : []),
    '',
    ...table(
      ['topic', 'partition', 'committed', 'latest', 'lag', 'records/s', 'in flight', 'done inside'],
      f.partitions.map((p) => [
        p.topic,
        p.partition,
        p.committed ?? 'not registered yet',
        p.latest,
        partitionLag(p),
        p.recordsPerSec === undefined ? undefined : Math.round(p.recordsPerSec),
        p.inFlight,
        doneCell(p.inFlightDone ?? 0, p.inFlightOffsets ?? 0),
      ]),
    ).split('\n'),
  ];
  if (f.deadLetters || f.errors)
    lines.push(
      '',
      `dead letters ${f.deadLetters}   processor errors ${f.errors}${f.lastError ? `   last: ${f.lastError.slice(0, 120)}` : ''}`,
    );
  if (f.events.length) lines.push('', ...f.events.slice(-5).map((e) => `  ${e}`));
  return lines;
}

/** The frame as one log line (non-terminal output). */
export function frameLine(f: ProgressFrame): string {
  const t = frameTotals(f);
  const fields = [
    ...(f.produced === undefined ? [] : [`produced=${f.produced}`]),
    `latest=${t.latest}`,
    `committed=${t.committed}`,
    `lag=${t.lag}`,
    `records/s=${Math.round(t.ratePerSec)}`,
    `partitions=${t.partitions}`,
    ...(t.unregistered ? [`unregistered=${t.unregistered}`] : []),
    `inFlight=${f.inFlight}`,
    ...(f.inFlightProgress?.ranges ? [`doneInside=${f.inFlightProgress.done}/${f.inFlightProgress.offsets}`] : []),
    `invocations=${f.invocations}`,
    ...(f.errors ? [`errors=${f.errors}`] : []),
  ];
  return `[${duration(f.elapsedMs)}] ${f.phase}: ${fields.join(' ')}`;
}

export type ProgressView = {
  show(f: ProgressFrame): void;
  /** Prints a notable event (on a terminal it joins the frame's event list instead). */
  event(text: string): void;
  /** Leaves the last frame on screen. */
  close(): void;
};

/**
 * `tty`: redraw in place; `lines`: a line every `lineEveryMs`; `off`: nothing. Terminal lines are
 * cut to `columns()`: a wrapped line would throw off the count of lines to redraw.
 */
export function createProgressView(
  write: (s: string) => void,
  mode: 'tty' | 'lines' | 'off',
  opts: { lineEveryMs?: number; columns?: () => number | undefined } = {},
): ProgressView {
  let drawn = 0;
  let lastLine = 0;
  const events: string[] = [];
  return {
    show(f) {
      if (mode === 'off') return;
      if (mode === 'lines') {
        if (Date.now() - lastLine < (opts.lineEveryMs ?? 5000)) return;
        lastLine = Date.now();
        write(`${frameLine(f)}\n`);
        return;
      }
      const cols = opts.columns?.();
      const width = Math.max(20, (cols && cols > 0 ? cols : 200) - 1);
      const lines = renderFrame({ ...f, events: [...f.events, ...events] }).map((l) => (l.length > width ? l.slice(0, width) : l));
      // Move to the start of the previous frame, clear to the end of the screen, draw.
      write(`${drawn ? `\x1b[${drawn}F\x1b[J` : ''}${lines.join('\n')}\n`);
      drawn = lines.length;
    },
    event(text) {
      // Events (a failure, why a run stopped) are one line each and say what frames cannot: written
      // without a view too (`--no-progress`).
      if (mode === 'tty') events.push(text);
      else write(`${text}\n`);
    },
    close() {
      drawn = 0;
    },
  };
}
