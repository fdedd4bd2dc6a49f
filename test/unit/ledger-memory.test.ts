import { createMemoryLedger } from '../../lib/ledger/ledger.memory';
import { ledgerContract } from '../contract/ledger.contract';

describe('in-memory ledger (contract)', () => {
  ledgerContract(async () => createMemoryLedger());
});
