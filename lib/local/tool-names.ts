/**
 * Names of what the project's own tools (benchmarks, the demo, the chaos soak) create on the shared
 * local stack: `<tool>-<what>-<creation time in base36 ms>-<random hex>`. The creation time in the
 * name is what lets `local:prune` find what a tool left behind, and how old it is, without asking
 * Kafka (which keeps no creation time for a topic) and without touching a user's own topics.
 */
import { randomBytes } from 'node:crypto';

/** The tools whose leftovers `local:prune` may delete. */
export const TOOLS = ['bench', 'demo', 'chaos'] as const;
export type Tool = (typeof TOOLS)[number];

/**
 * First name parts of chaos scenarios from before the `chaos-` prefix (`c3-<time>-<hex>`, `crc-`,
 * `clb-`, `load-`): a data dir kept across upgrades still holds them.
 */
const LEGACY_CHAOS = /^(c\d{1,2}|crc|clb|load)$/;
/** The planner benchmark's topics and ledger from before: `bench<time36>-0042`, `bench<time36>-ledger`. */
const LEGACY_BENCH_PLANNER = /^bench([0-9a-z]{8})$/;

/** Base36 millisecond times from 2020 to 2059 are 8 characters; older or later ones are not ours. */
const EARLIEST_MS = Date.UTC(2020, 0, 1);
const TIME_PART = /^[0-9a-z]{8}$/;

/** A fresh name for a tool's topic, table or stream: `<tool>-<what>-<time36>-<hex4>`. */
export function toolResourceName(tool: Tool, what: string, nowMs = Date.now(), random = randomBytes(2).toString('hex')): string {
  return `${tool}-${what}-${nowMs.toString(36)}-${random}`;
}

/** The tool and creation time a name was made with, or undefined for any other name (a user's). */
export function parseToolResourceName(name: string, nowMs: number): { tool: Tool; createdAtMs: number } | undefined {
  const parts = name.split('-');
  const first = parts[0] ?? '';
  const planner = LEGACY_BENCH_PLANNER.exec(first);
  if (planner?.[1]) return plausible(planner[1], nowMs) ? { tool: 'bench', createdAtMs: parseInt(planner[1], 36) } : undefined;
  const tool: Tool | undefined = (TOOLS as readonly string[]).includes(first)
    ? (first as Tool)
    : LEGACY_CHAOS.test(first)
      ? 'chaos'
      : undefined;
  if (!tool) return undefined;
  // The last time-like part: a tool's `what` before it may look like one too.
  const time = parts.slice(1).findLast((part) => plausible(part, nowMs));
  return time === undefined ? undefined : { tool, createdAtMs: parseInt(time, 36) };
}

/** An 8-character base36 part that reads as a time from 2020 up to a day after now (slack for clocks). */
function plausible(part: string, nowMs: number): boolean {
  if (!TIME_PART.test(part)) return false;
  const ms = parseInt(part, 36);
  return ms >= EARLIEST_MS && ms <= nowMs + 86_400_000;
}
