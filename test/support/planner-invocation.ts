/**
 * One scheduled planner invocation in a process of its own, processors in the same process, for the
 * tests that kill it mid-loop: `node --import tsx test/support/planner-invocation.ts <timeoutMs> <requestId>`.
 * The deployment config comes from STREAMS_CONFIG, the services from the environment.
 */
import '../../lib/runtime/require-middy';
import { createPlannerHandler } from '../../functions/planner';
import { handler as processor } from '../../functions/processor';
import { createInProcessDispatcher } from '../../lib/dispatch/dispatcher.local';
import { lambdaContext } from '../../lib/runtime/scheduled-invocations';

const [timeoutMs, requestId] = [Number(process.argv[2]), process.argv[3] ?? 'child'];
const dispatcher = createInProcessDispatcher((range) =>
  processor(range, lambdaContext(`${requestId}-p-${Date.now()}`, 5_000, 'processor')),
);
createPlannerHandler({ dispatcher })({ loop: true }, lambdaContext(requestId, timeoutMs)).then(
  (r) => process.stderr.write(`${JSON.stringify(r)}\n`),
  (err: unknown) => {
    process.stderr.write(`${String(err)}\n`);
    process.exitCode = 1;
  },
);
