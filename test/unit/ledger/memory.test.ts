import { createMemoryLedger } from '../../../lib/ledger/ledger.memory';
import { ledgerContract } from '../../contract/ledger.contract';
import { plannerLoopContract } from '../../contract/planner-loop.contract';

describe('in-memory ledger (contract)', () => {
  ledgerContract(async () => createMemoryLedger());
});

describe('in-memory ledger (planner loop lease contract)', () => {
  plannerLoopContract(async () => createMemoryLedger());
});
