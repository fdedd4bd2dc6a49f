import { runHandler } from 'kafka-lambda-direct/testing';
import clickCounts from './click-counts';

// runHandler runs the handler through the real planner and processor path on in-memory adapters.
it('counts clicks per user, and dead-letters a click without a user', async () => {
  const clicks = [
    { key: 'ann', value: { page: '/' } },
    { key: 'bob', value: { page: '/a' }, partition: 1 },
    { key: 'ann', value: { page: '/b' } },
    { key: null, value: { page: '/c' } },
  ];
  const { sinkItems, deadLetters, progress } = await runHandler(clickCounts, clicks, { stream: { maxAttempts: 1 } });
  expect(sinkItems).toEqual(
    expect.arrayContaining([
      { userId: 'ann', clicks: 2 },
      { userId: 'bob', clicks: 1 },
    ]),
  );
  expect(deadLetters.map((d) => d.offset)).toEqual([2]);
  expect(progress.map((p) => p.committed)).toEqual([3, 1]);
});
