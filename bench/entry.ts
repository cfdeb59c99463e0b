/**
 * How every benchmark runs as a program: fresh random secrets for this run only (docs/security.md:
 * no secret has a default value) and the one-line failure handler of the entry points.
 */
import { runEntryPoint } from '../runtime';
import { useEphemeralSecrets } from '../secrets';

/**
 * Runs benchmark `main` as an entry point.
 * @param opts.exitWhenDone exit 0 once `main` resolves (default true; a server child keeps running)
 */
export function runBench(name: string, main: () => Promise<unknown>, opts: { exitWhenDone?: boolean } = {}): void {
  useEphemeralSecrets();
  runEntryPoint(name, async () => {
    await main();
    if (opts.exitWhenDone !== false) process.exit(0);
  });
}
