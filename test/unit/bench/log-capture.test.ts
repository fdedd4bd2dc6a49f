/** What the Lambda handlers write to stdout, counted by role and swallowed (bench:latency --deployed). */
import { captureStdout } from '../../../bench/log-capture';

describe('captureStdout', () => {
  it('counts bytes and lines per role, swallows them, calls write callbacks, and restores the stream', async () => {
    const written: string[] = [];
    const stream = { write: (chunk: string) => written.push(chunk) > 0 } as unknown as NodeJS.WriteStream;
    const original = stream.write;
    let role: string | undefined = 'planner';
    const capture = captureStdout(() => role, stream);
    stream.write('{"a":1}\n');
    role = 'processor';
    stream.write(Buffer.from('é\n\n'));
    role = undefined;
    const called = new Promise<void>((r) => stream.write('x', () => r()));
    await called;
    expect(written).toEqual([]);
    expect(capture.byRole()).toEqual(
      new Map([
        ['planner', { bytes: 8, lines: 1 }],
        ['processor', { bytes: 4, lines: 2 }],
        ['other', { bytes: 1, lines: 0 }],
      ]),
    );
    capture.restore();
    expect(stream.write).toBe(original);
    stream.write('after');
    expect(written).toEqual(['after']);
  });
});
