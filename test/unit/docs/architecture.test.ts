/**
 * What docs/architecture.md says of the code's shape where it counts or orders things: the ports
 * (a port is a file of lib/ports/ whose doc comment starts with `Port:`), and the planner's phases
 * in the order `planStream` (lib/planner/run.ts) runs them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { codeSpans, markdownSection } from '../../support/markdown-table';

const ROOT = join(__dirname, '..', '..', '..');
const DOC = 'docs/architecture.md';

describe('docs: architecture.md', () => {
  it('names every port of lib/ports/, one type per port file, and counts them', () => {
    const dir = join(ROOT, 'lib/ports');
    const ports = readdirSync(dir)
      .filter((f) => f.endsWith('.ts'))
      .map((f) => readFileSync(join(dir, f), 'utf8'))
      .filter((text) => /^\/\*\*\s*(\n\s*\*)?\s*Port:/.test(text));
    const paragraph = markdownSection(DOC, 'Components')
      .split('\n\n')
      .find((p) => p.startsWith('Ports and adapters:')) as string;
    const sentence = paragraph.slice(0, paragraph.indexOf('. '));
    const named = codeSpans(sentence).filter((s) => /^[A-Z]\w+$/.test(s));
    const words = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve'];
    expect(sentence).toContain(`${words[ports.length]} ports`);
    for (const text of ports) {
      const declared = [...text.matchAll(/^export type (\w+)/gm)].map((m) => m[1] as string);
      expect(named.filter((n) => declared.includes(n))).toHaveLength(1);
    }
    expect(named).toHaveLength(ports.length);
  });

  it("lists the planner's phases in the order planStream runs them", () => {
    // The doc's step -> the function of lib/planner/run.ts that runs it.
    const phases: Record<string, string> = {
      'Reach Kafka': 'reachKafka',
      Fence: 'fence',
      Discover: 'discover',
      Offsets: 'readOffsets',
      Decide: 'decidePlan',
      Persist: 'persist',
      Dispatch: 'dispatch',
      Record: 'record',
    };
    const steps = [...markdownSection(DOC, 'Planning, one run').matchAll(/^\d+\. \*\*(.+?)\*\*/gm)].map((m) => m[1] as string);
    expect(steps).toEqual(Object.keys(phases));
    // Where planStream first calls each, in its source.
    const path = join(ROOT, 'lib/planner/run.ts');
    const sf = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
    const plan = sf.statements.find((s) => ts.isFunctionDeclaration(s) && s.name?.text === 'planStream') as ts.FunctionDeclaration;
    const calls: string[] = [];
    const visit = (n: ts.Node): void => {
      if (ts.isCallExpression(n) && ts.isIdentifier(n.expression)) calls.push(n.expression.text);
      ts.forEachChild(n, visit);
    };
    visit(plan);
    const order = Object.values(phases).map((f) => calls.indexOf(f));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect(order).toEqual([...order].sort((a, b) => a - b));
  });
});
