import type { FoldingHandler } from 'kafka-lambda-direct';

/**
 * Clicks per user, exactly once. A fold says what each record adds to which sink item: `map` turns
 * a click into +1 for its user, `combine` adds contributions up, and `write` turns a user's total
 * into one DynamoDB update. The processor folds a whole range per user and guards each write, so a
 * retry never counts a click twice.
 */
const clickCounts: FoldingHandler<number> = {
  mode: 'dynamodb-exactly-once',
  fold: {
    map(record) {
      const user = record.key?.toString('utf8');
      // A thrown error rejects the record: it is retried, then dead-lettered (the range goes on).
      if (!user) throw new Error(`click ${record.idempotencyKey} has no user in its key`);
      return { key: { userId: user }, value: 1 };
    },
    combine: (a, b) => a + b,
    write: (item, clicks) => ({ update: { ...item, expression: 'ADD clicks :n', values: { ':n': clicks } } }),
  },
};

export default clickCounts;
