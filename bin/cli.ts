/** `kafka-direct <command>` / `npm run cli -- <command>`: the operations CLI (lib/cli/program.ts). */
import { runCli } from '../lib/cli/program';

const interrupt = new AbortController();
process.once('SIGINT', () => {
  // First Ctrl-C: a running replay stops at a chunk boundary; a second one exits at once.
  interrupt.abort();
  process.once('SIGINT', () => process.exit(130));
});

runCli(
  process.argv.slice(2),
  { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s) },
  { env: process.env, signal: interrupt.signal },
).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`${String((err as Error)?.stack ?? err)}\n`);
    process.exitCode = 1;
  },
);
