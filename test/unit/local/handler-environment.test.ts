/** A local run's handler environment: the config's variables set where the shell has none, removed again afterwards. */
import { parseDeploymentConfig } from '../../../lib/config/schema';
import { applyHandlerEnvironment, appliedEnvironmentLine } from '../../../lib/local/handler-environment';

const streams = parseDeploymentConfig(
  {
    ledgerTable: 'ledger',
    streams: [
      {
        id: 'orders',
        kafka: { brokers: ['localhost:9092'] },
        topics: ['orders'],
        handler: { module: './h.ts', mode: 'at-least-once', environment: { QUEUE_URL: 'from-config', API_URL: 'config-api' } },
      },
      {
        id: 'refunds',
        kafka: { brokers: ['localhost:9092'] },
        topics: ['refunds'],
        handler: { module: './h.ts', mode: 'at-least-once', environment: { QUEUE_URL: 'from-config', REFUNDS_TABLE: 'refunds' } },
      },
      { id: 'plain', kafka: { brokers: ['localhost:9092'] }, topics: ['plain'] },
    ],
  },
  'test',
).streams;

describe('applyHandlerEnvironment', () => {
  it("sets every stream's variables that are not set, keeps the shell's own, and restores what it set", () => {
    const env: NodeJS.ProcessEnv = { API_URL: 'shell-api', HOME: '/home/x' };
    const applied = applyHandlerEnvironment(streams, env);
    expect(env).toEqual({ API_URL: 'shell-api', HOME: '/home/x', QUEUE_URL: 'from-config', REFUNDS_TABLE: 'refunds' });
    expect(applied.set.sort()).toEqual(['QUEUE_URL', 'REFUNDS_TABLE']);
    expect(applied.kept).toEqual(['API_URL']);
    expect(appliedEnvironmentLine(applied)).toBe(
      'handler environment: QUEUE_URL, REFUNDS_TABLE from the config; API_URL kept from the shell',
    );
    applied.restore();
    expect(env).toEqual({ API_URL: 'shell-api', HOME: '/home/x' });
  });

  it('counts a variable the shell set to the empty string as set', () => {
    const env: NodeJS.ProcessEnv = { QUEUE_URL: '' };
    expect(applyHandlerEnvironment(streams, env).kept).toEqual(['QUEUE_URL']);
    expect(env.QUEUE_URL).toBe('');
  });

  it('says nothing for streams without handler variables', () => {
    const applied = applyHandlerEnvironment([streams[2]!], {});
    expect(applied).toMatchObject({ set: [], kept: [] });
    expect(appliedEnvironmentLine(applied)).toBeUndefined();
  });
});
