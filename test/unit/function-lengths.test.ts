/** The function-length report (scripts/function-lengths.ts), and the rule it enforces on the tree. */
import { resolve } from 'node:path';
import { functionLengths, longFunctions } from '../../scripts/function-lengths';

describe('function lengths', () => {
  it("counts a function's own lines: its span minus the functions nested in it", () => {
    const text = [
      'export function outer() {', // 1
      '  const a = 1;', // 2
      '  const inner = () => {', // 3
      '    return a;', // 4
      '  };', // 5
      '  return inner;', // 6
      '}', // 7
      'class C {', // 8
      '  method() {', // 9
      '    return 2;', // 10
      '  }', // 11
      '}', // 12
    ].join('\n');
    expect(functionLengths('x.ts', text).map(({ name, firstLine, lastLine, ownLines }) => [name, firstLine, lastLine, ownLines])).toEqual([
      ['outer', 1, 7, 4],
      ['inner', 3, 5, 3],
      ['method', 9, 11, 3],
    ]);
  });

  it('finds a long function, longest first', () => {
    const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const text = `function long() {\n${body(90)}\n}\nfunction short() {\n${body(3)}\n}\n`;
    expect(
      functionLengths('y.ts', text)
        .filter((f) => f.ownLines > 80)
        .map((f) => [f.name, f.ownLines]),
    ).toEqual([['long', 92]]);
  });

  it('no function in lib/, functions/, bin/, infra/, bench/, test/chaos/ or test/support/ (test files aside) has over 80 lines of its own', () => {
    const long = longFunctions(resolve(__dirname, '..', '..'));
    expect(long.map((f) => `${f.ownLines} ${f.file}:${f.firstLine} ${f.name}`)).toEqual([]);
  });
});
