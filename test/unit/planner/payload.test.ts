import { parseDeploymentConfig } from '../../../lib/config/schema';
import { parsePlannerPayload } from '../../../lib/planner/payload';

const config = parseDeploymentConfig(
  {
    ledgerTable: 'ledger',
    streams: ['a', 'b'].map((id) => ({ id, kafka: { brokers: ['localhost:9092'] }, topics: ['t'] })),
  },
  'test',
);

describe('planner payload', () => {
  it('plans once for an operator, and loops for the schedule (its input, or an EventBridge rule event)', () => {
    expect(parsePlannerPayload({}, config)).toMatchObject({ dryRun: false, loop: false });
    expect(parsePlannerPayload(undefined, config)).toMatchObject({ dryRun: false, loop: false });
    expect(parsePlannerPayload({ loop: true }, config)).toMatchObject({ dryRun: false, loop: true });
    const rule = { version: '0', id: 'e', 'detail-type': 'Scheduled Event', source: 'aws.events', detail: {} };
    expect(parsePlannerPayload(rule, config)).toMatchObject({ loop: true });
    const some = parsePlannerPayload({ streams: ['b'], loop: true }, config);
    expect(some.chain ? [] : some.streams.map((s) => s.id)).toEqual(['b']);
  });

  const sqsEvent = (...bodies: string[]) => ({
    Records: bodies.map((body, i) => ({ messageId: `m${i}`, eventSource: 'aws:sqs', body, attributes: {}, receiptHandle: 'r' })),
  });

  it("reads a tick chain's queue message: the tick and its stream, undefined when no longer configured", () => {
    const req = parsePlannerPayload(sqsEvent('{"stream":"b","seq":3,"dueMs":1000}', '{"stream":"gone","seq":1,"dueMs":0}'), config);
    if (!req.chain) throw new Error('not read as a chain request');
    expect(req.chain.map((c) => [c.tick, c.stream?.id])).toEqual([
      [{ stream: 'b', seq: 3, dueMs: 1000 }, 'b'],
      [{ stream: 'gone', seq: 1, dueMs: 0 }, undefined],
    ]);
  });

  it('refuses a queue message that is not a tick, naming the message and what is wrong', () => {
    expect(() => parsePlannerPayload(sqsEvent('not json'), config)).toThrow(/tick message m0 is not a tick \(body: /);
    expect(() => parsePlannerPayload(sqsEvent('{"stream":"b","seq":0,"dueMs":1}'), config)).toThrow(
      /tick message m0 is not a tick \(seq: /,
    );
    expect(() => parsePlannerPayload(sqsEvent('{"stream":"b","seq":1,"dueMs":1,"x":1}'), config)).toThrow(/tick message m0 is not a tick/);
  });

  it('refuses a looping dry run and an unknown field, naming them', () => {
    expect(() => parsePlannerPayload({ loop: true, dryRun: true }, config)).toThrow(
      'invalid planner payload: a dry run plans once; "loop" and "dryRun" do not go together',
    );
    expect(() => parsePlannerPayload({ loop: 'yes' }, config)).toThrow(/invalid planner payload: loop: .*boolean/);
    expect(() => parsePlannerPayload({ lop: true }, config)).toThrow(
      /accepted: \{"dryRun"\?: boolean, "streams"\?: string\[\], "loop"\?: boolean\}/,
    );
  });
});
