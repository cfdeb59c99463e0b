/**
 * `npm run bench`: runs every benchmark section and prints its figures. `BENCH_ONLY=http,…` picks sections.
 */
import { runHttpBench } from './http';

const SECTIONS: Record<string, () => Promise<void>> = {
  http: runHttpBench,
};

async function main(): Promise<void> {
  const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
  for (const [name, run] of Object.entries(SECTIONS)) {
    if (only && !only.includes(name)) continue;
    console.log(`\n=== ${name} ===`);
    await run();
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
