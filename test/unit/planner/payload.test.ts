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
    expect(parsePlannerPayload({ streams: ['b'], loop: true }, config).streams.map((s) => s.id)).toEqual(['b']);
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
