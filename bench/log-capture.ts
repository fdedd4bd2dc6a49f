/**
 * What the Lambda handlers write to stdout (Powertools' JSON log lines and EMF metrics: in Lambda,
 * CloudWatch Logs ingests them), counted by the role the writer runs under and swallowed, so the
 * benchmark's own stdout keeps only its result line. Lambda's own START/END/REPORT lines are not
 * written here (the cost model adds them).
 */

export type LogTally = { bytes: number; lines: number };

export type StdoutCapture = {
  /** Bytes and lines written by each role since the capture began (`other` outside any role). */
  byRole(): Map<string, LogTally>;
  /** Puts the real stdout back. */
  restore(): void;
};

/** Replaces `stream.write` (process.stdout's by default) with a counter until `restore()`. */
export function captureStdout(roleNow: () => string | undefined, stream: NodeJS.WriteStream = process.stdout): StdoutCapture {
  const tallies = new Map<string, LogTally>();
  const original = stream.write;
  const write = (chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
    const role = roleNow() ?? 'other';
    const t = tallies.get(role) ?? { bytes: 0, lines: 0 };
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    t.bytes += Buffer.byteLength(text, 'utf8');
    t.lines += text.split('\n').length - 1;
    tallies.set(role, t);
    const done = rest.find((r) => typeof r === 'function') as ((err?: Error | null) => void) | undefined;
    if (done) process.nextTick(done);
    return true;
  };
  stream.write = write as typeof stream.write;
  return {
    byRole: () => tallies,
    restore: () => {
      stream.write = original;
    },
  };
}
