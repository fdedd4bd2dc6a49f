/**
 * Node's flags as Lambda's Node.js bootstrap sets them for a function of `memoryMb`: the heap limits
 * follow the memory size (new space a tenth of it: two semi-spaces of a twentieth; old space the
 * memory less that tenth), with the garbage collector exposed and Lambda's larger HTTP header limit.
 */
export function lambdaNodeFlags(memoryMb: number): string[] {
  return [
    '--expose-gc',
    '--max-http-header-size=81920',
    `--max-semi-space-size=${Math.floor(memoryMb / 20)}`,
    `--max-old-space-size=${memoryMb - Math.floor(memoryMb / 10)}`,
  ];
}
