/**
 * dynamodb-faults: 20% of the ledger's requests fail before they are sent (throttling or
 * InternalServerError); the SDK's retry absorbs most, the system's own retries the rest.
 */
import type { RoundScenario } from '../scenario';

export const dynamodbFaults = (): RoundScenario => ({
  knobs: () => ({ faultFraction: 0.2 }),
  finish(run) {
    const { faults, processorErrors, plannerFailures } = run.tally;
    run.injected = `${faults.injected} ledger requests failed before sending (20% of requests, throttling or InternalServerError, SDK maxAttempts 2); ${processorErrors} processor invocations and ${plannerFailures} planner runs failed after the SDK's retry and were retried by the system`;
    // Without faults this is a baseline run: it must not pass as one.
    if (!faults.injected) run.problems.push('no ledger request was failed on purpose');
    if (!faults.met) run.problems.push('no ledger request met an injected fault (none was retried or failed)');
  },
});
