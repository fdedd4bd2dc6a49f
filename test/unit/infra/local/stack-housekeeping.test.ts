import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dataUsage, sizeText, usageLimits, usageReport } from '../../../../infra/local/data-usage';
import { log4jConfig } from '../../../../infra/local/kafka';
import { capOldLog, describeLogLimits, logLimits } from '../../../../infra/local/logs';
import { isOurService } from '../../../../infra/local/ownership';
import { parsePruneArgs, pruneCandidates } from '../../../../infra/local/prune';
import { toolResourceName } from '../../../../lib/local/tool-names';

const MB = 1024 * 1024;
const DAY = 86_400_000;

describe('log limits', () => {
  it('defaults to 5 MB files, 3 kept, and reads LOCAL_LOG_FILE_MB and LOCAL_LOG_FILES', () => {
    expect(logLimits({})).toEqual({ fileBytes: 5 * MB, keptFiles: 3 });
    expect(logLimits({ LOCAL_LOG_FILE_MB: '0.5', LOCAL_LOG_FILES: '2' })).toEqual({ fileBytes: 0.5 * MB, keptFiles: 2 });
    expect(describeLogLimits(logLimits({ LOCAL_LOG_FILE_MB: '0.05', LOCAL_LOG_FILES: '2' }))).toBe('rotated at 0.05 MB, 2 kept');
  });

  it.each([
    ['LOCAL_LOG_FILE_MB', '0', 'LOCAL_LOG_FILE_MB=0 is not a size in MB from 0.01 to 1024'],
    ['LOCAL_LOG_FILE_MB', 'big', 'LOCAL_LOG_FILE_MB=big is not a size in MB from 0.01 to 1024'],
    ['LOCAL_LOG_FILES', '1.5', 'LOCAL_LOG_FILES=1.5 is not a whole number from 1 to 20'],
    ['LOCAL_LOG_FILES', '0', 'LOCAL_LOG_FILES=0 is not a whole number from 1 to 20'],
  ])('refuses %s=%s in one line', (name, value, message) => {
    expect(() => logLimits({ [name]: value })).toThrow(message);
  });

  it("configures log4j2's size-rotated file with the limits", () => {
    const conf = log4jConfig('/x/server.log', { fileBytes: 1234, keptFiles: 4 });
    expect(conf).toMatch(/^appender\.file\.type=RollingFile$/m);
    expect(conf).toMatch(/^appender\.file\.filePattern=\/x\/server\.log\.%i$/m);
    expect(conf).toMatch(/^appender\.file\.policies\.size\.size=1234$/m);
    expect(conf).toMatch(/^appender\.file\.strategy\.max=4$/m);
  });

  it('cuts a log written before the limits to nothing, and leaves a small one alone', () => {
    const dir = mkdtempSync(join(tmpdir(), 'logs-'));
    try {
      writeFileSync(join(dir, 'big.log'), 'x'.repeat(2000));
      writeFileSync(join(dir, 'small.log'), 'x'.repeat(10));
      capOldLog(join(dir, 'big.log'), { fileBytes: 1000, keptFiles: 1 });
      capOldLog(join(dir, 'small.log'), { fileBytes: 1000, keptFiles: 1 });
      capOldLog(join(dir, 'missing.log'), { fileBytes: 1000, keptFiles: 1 });
      expect(statSync(join(dir, 'big.log')).size).toBe(0);
      expect(statSync(join(dir, 'small.log')).size).toBe(10);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('data usage', () => {
  it('counts distinct user partitions over the nodes, not internal topics nor deleted dirs', () => {
    const root = mkdtempSync(join(tmpdir(), 'usage-'));
    try {
      for (const node of ['n1', 'n2']) {
        for (const d of ['orders-0', 'orders-1', 'my-topic-12', '__consumer_offsets-0', '__cluster_metadata-0', 'old-0.3f2a-delete']) {
          mkdirSync(join(root, node, d), { recursive: true });
          writeFileSync(join(root, node, d, '00000000000000000000.log'), 'x'.repeat(5000));
        }
      }
      const u = dataUsage([join(root, 'n1'), join(root, 'n2'), join(root, 'absent')]);
      expect(u.partitions).toBe(3);
      // On disk, in whole blocks: at least the bytes written.
      expect(u.bytes).toBeGreaterThanOrEqual(12 * 5000);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('says the size, and warns naming the prune command only above a threshold', () => {
    const limits = usageLimits({});
    expect(limits).toEqual({ partitions: 2000, bytes: 2048 * MB });
    expect(usageReport({ bytes: 310 * MB, partitions: 1200 }, '.local/stack/kafka', limits, 'npm run local:prune')).toEqual([
      'Kafka data: 310 MB in 1,200 partitions (.local/stack/kafka)',
    ]);
    expect(usageReport({ bytes: 2.5 * 1024 * MB, partitions: 10_454 }, 'k', limits, 'npm run local:prune')).toEqual([
      'Kafka data: 2.5 GB in 10,454 partitions (k)',
      "warning: the local stack's Kafka data is over 2,000 partitions and over 2 GB, reopened at every start: " +
        "npm run local:prune deletes what the project's tools left (their topics older than a day; --dry-run lists them)",
    ]);
    expect(usageReport({ bytes: 10, partitions: 5 }, 'k', usageLimits({ LOCAL_WARN_PARTITIONS: '4' }), 'p')[1]).toMatch(
      /over 4 partitions,/,
    );
    expect(() => usageLimits({ LOCAL_WARN_DATA_MB: '-1' })).toThrow('LOCAL_WARN_DATA_MB=-1 is not a whole number');
    expect([sizeText(0), sizeText(1536), sizeText(150 * MB)]).toEqual(['0 bytes', '1.5 KB', '150 MB']);
  });
});

describe('local:prune', () => {
  const now = Date.UTC(2026, 11, 2);
  it('picks only names the tools made, older than the age', () => {
    const old = toolResourceName('bench', 'e2e', now - 2 * DAY, 'aaaa');
    const fresh = toolResourceName('demo', 'payments', now - 3_600_000, 'bbbb');
    const oldTable = toolResourceName('chaos', 'ledger', now - 3 * DAY, 'cccc');
    const got = pruneCandidates(
      [fresh, old, 'clicks', `orders-${(now - 3 * DAY).toString(36)}`],
      [oldTable, 'kafka-direct-ledger'],
      DAY,
      now,
    );
    expect(got).toEqual([
      { kind: 'table', name: oldTable, tool: 'chaos', createdAtMs: now - 3 * DAY },
      { kind: 'topic', name: old, tool: 'bench', createdAtMs: now - 2 * DAY },
    ]);
    expect(pruneCandidates([fresh], [], 30 * 60_000, now).map((c) => c.name)).toEqual([fresh]);
  });

  it('reads --dry-run and --older-than, refusing anything else', () => {
    expect(parsePruneArgs([])).toEqual({ dryRun: false, olderThanMs: DAY });
    expect(parsePruneArgs(['--dry-run', '--older-than', '12h'])).toEqual({ dryRun: true, olderThanMs: 12 * 3_600_000 });
    expect(parsePruneArgs(['--older-than', '30m']).olderThanMs).toBe(30 * 60_000);
    expect(() => parsePruneArgs(['--older-than', '2x'])).toThrow('--older-than takes an age like 30m, 12h or 2d, not "2x"');
    expect(() => parsePruneArgs(['--all'])).toThrow("unknown option '--all'; usage: local:prune [--dry-run] [--older-than <age>]");
  });
});

describe('recorded services', () => {
  it('is ours only while alive and the listener on its port; by command line before it listens', async () => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    const pid = child.pid as number;
    try {
      const s = { pid, port: 1234, marker: 'sleep' };
      expect(isOurService(s, () => pid)).toBe(true);
      // Someone else listens on its port: the pid is not the recorded service any more.
      expect(isOurService(s, () => pid + 1)).toBe(false);
      expect(isOurService(s, () => 'none')).toBe(true);
      expect(isOurService({ ...s, marker: 'kafka.Kafka' }, () => 'none')).toBe(false);
    } finally {
      child.kill();
      await new Promise((r) => child.once('exit', r));
    }
    expect(isOurService({ pid, port: 1234, marker: 'sleep' }, () => 'none')).toBe(false);
  });
});
