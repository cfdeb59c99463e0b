/**
 * Mocha's configuration. Mocha adds a config file's `spec` to the files named on the command line, so
 * `npx mocha test/x.test.ts` would run the whole suite besides; the suite's glob applies only when no test
 * file or glob is named.
 */
const named = process.argv.slice(2).some((a) => !a.startsWith('-') && /\.ts$|\*/.test(a));
module.exports = {
  require: ['tsx/cjs', 'test/hooks.ts'],
  extension: ['ts'],
  ...(named ? {} : { spec: ['test/**/*.test.ts'] }),
  timeout: 60000,
  exit: true,
};
