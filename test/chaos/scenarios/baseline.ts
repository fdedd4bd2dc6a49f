/** baseline: nothing injected; the figures alone are checked. */
import type { RoundScenario } from '../scenario';

export const baseline = (): RoundScenario => ({});
