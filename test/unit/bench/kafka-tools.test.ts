/** The benchmarks' timed commands: a missing tool is named with what installs it, a failing one with its stderr. */
import { PrerequisiteError } from '../../../lib/errors';
import { runTimed } from '../../../bench/kafka-tools';

it('names a tool that is not installed, and how to install it', () => {
  expect(() => runTimed('no-such-tool-7f3a', ['-V'], 5000, 'kcat')).toThrow(PrerequisiteError);
  expect(() => runTimed('no-such-tool-7f3a', ['-V'], 5000, 'kcat')).toThrow(
    'kcat is not installed: no-such-tool-7f3a was not found on PATH (Debian: bash infra/local/install-system-packages.sh)',
  );
});

it("names a tool that failed with its exit status and stderr's tail", () => {
  expect(() => runTimed('bash', ['-c', 'echo broken >&2; exit 3'], 5000, 'probe')).toThrow('probe failed (3): broken');
});

it('returns what a tool printed', () => {
  expect(runTimed('bash', ['-c', 'echo ok'], 5000).stdout).toBe('ok\n');
});
