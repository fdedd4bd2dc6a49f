/** The tests themselves run on Lambda's Node major version (the `node@22` dev dependency). */
describe('test runtime', () => {
  it('is Node.js 22, like the nodejs22.x Lambda runtime', () => {
    expect(process.versions.node.split('.')[0]).toBe('22');
  });
});
