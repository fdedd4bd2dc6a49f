/** The process's peak resident set and heap, sampled while a run goes. */

const MB = 1024 * 1024;

export type PeakMemory = { peakRssMb: number; peakHeapUsedMb: number };

/** Samples `process.memoryUsage()` every `everyMs` until `stop()`, which returns the peaks in MB. */
export function sampleMemory(everyMs: number): { stop(): PeakMemory } {
  let rss = 0;
  let heap = 0;
  const sample = (): void => {
    const m = process.memoryUsage();
    rss = Math.max(rss, m.rss);
    heap = Math.max(heap, m.heapUsed);
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      sample();
      clearInterval(timer);
      return { peakRssMb: Math.round(rss / MB), peakHeapUsedMb: Math.round(heap / MB) };
    },
  };
}
