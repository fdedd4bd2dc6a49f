/**
 * The planner fence (I5), once: a planner or operator write applies only while the stream's META
 * item still names the epoch and owner that wrote it. The in-memory ledger checks it with `meets`;
 * the DynamoDB adapter compiles it into the condition of every fenced write.
 */
import type { Requirement } from './item-step';

/** The requirements on the META item of a write fenced by `epoch` and `ownerToken`. */
export function plannerFence(epoch: number, ownerToken: string): Requirement[] {
  return [
    { field: 'epoch', is: epoch },
    { field: 'ownerToken', is: ownerToken },
  ];
}
