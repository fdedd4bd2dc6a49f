/**
 * retention-continue and retention-fail: retention deletes records on both paths, with
 * failOnDataLoss false (the loss is recorded, the run continues) or true (the partition stops).
 * Processor path: planned ranges whose first offsets go before they are read (p0 [0, 40)).
 * Planner path: the cursor is behind the log start when the planner runs (the last 30 unread of
 * 60 new p1 records).
 */
import type { Figures, RoundScenario, Run } from '../scenario';

/** failOnDataLoss=true: nothing recorded lost, p0's range parked and p1 failed with DATA_LOSS. */
function checkStopped(run: Run, f: Figures): void {
  if (f.dataLoss !== 0) run.problems.push(`failOnDataLoss=true recorded data loss (${f.dataLoss} records)`);
  if (f.stopped === 0) run.problems.push('failOnDataLoss=true: no partition stopped');
  for (const snap of f.snaps) {
    const p0 = snap.ranges.find((r) => r.partition === 0 && r.status === 'parked');
    const p1 = snap.partitions.find((p) => p.partition === 1);
    if (!p0?.lastError?.includes('DATA_LOSS')) run.problems.push(`${snap.meta?.stream}: p0 range not parked with DATA_LOSS`);
    if (p1?.status !== 'failed' || !p1.reason?.includes('DATA_LOSS'))
      run.problems.push(`${snap.meta?.stream}: p1 not failed with DATA_LOSS (status ${p1?.status})`);
  }
}

const retention = (failOnDataLoss: boolean) => (): RoundScenario => ({
  knobs: (base) => ({ config: { ...base.config, failOnDataLoss, maxOffsetsPerTrigger: undefined } }),
  hasEvent: true,
  allows: { dataLoss: true, stopped: failOnDataLoss },
  async beforePlan(run) {
    if (run.eventDone || run.tally.rounds < 1) return;
    run.eventDone = true;
    // Planner path: the cursor is behind the log start when the planner runs.
    await run.produce(run.topic1, 1, 60);
    await run.env.admin.fetchTopicMetadata({ topics: [run.topic1] }); // kafkajs's deleteTopicRecords needs it cached
    const p1 = run.produced.filter((r) => r.partition === 1);
    const cut = (p1.at(-1)?.offset ?? 0) - 29;
    await run.env.admin.deleteTopicRecords({ topic: run.topic1, partitions: [{ partition: 1, offset: String(cut) }] });
  },
  async afterPlan(run) {
    if (run.tally.rounds !== 0) return;
    // Processor path: planned ranges whose first offsets retention deletes before they are read.
    await run.env.admin.fetchTopicMetadata({ topics: [run.topic1] });
    await run.env.admin.deleteTopicRecords({ topic: run.topic1, partitions: [{ partition: 0, offset: '40' }] });
    run.injected = `retention deleted p0 [0, 40) after planning and the last 30 unread of 60 new p1 records before planning (failOnDataLoss=${failOnDataLoss})`;
  },
  check(run, f) {
    if (failOnDataLoss) checkStopped(run, f);
    else if (f.dataLoss !== 70) run.problems.push(`expected 70 records in recorded data-loss spans, found ${f.dataLoss}`);
  },
});

export const retentionContinue = retention(false);
export const retentionFail = retention(true);
