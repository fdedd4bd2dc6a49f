/** Plain-text rendering shared by the CLI and the local runtime's progress view (no dependencies). */

/** Renders rows as an aligned table; numbers (and '-') are right-aligned, text left-aligned. */
export function table(headers: string[], rows: Array<Array<string | number | undefined>>): string {
  const cells = rows.map((r) => headers.map((_, i) => cellText(r[i])));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] as string).length)));
  const numeric = headers.map(
    (_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === 'number' || r[i] === undefined || r[i] === '-'),
  );
  const line = (r: string[]) =>
    r
      .map((c, i) => (numeric[i] ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number)))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

function cellText(v: string | number | undefined): string {
  if (v === undefined) return '-';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : v.toFixed(1);
  return v;
}

/** ISO-8601 UTC, or '-' when unset. */
export function isoTime(ms: number | undefined): string {
  return ms === undefined ? '-' : new Date(ms).toISOString();
}

/** `1.2s`, `3m04s`, `2h05m`: durations for humans. */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 100) / 10);
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}
