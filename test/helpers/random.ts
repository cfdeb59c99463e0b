/**
 * A seeded pseudo-random generator for tests and benches that must draw the same numbers on every run
 * (mulberry32, a 32-bit generator by Tommy Ettinger: fast, with a full 2^32 period for each seed).
 * @param seed any 32-bit integer
 * @returns a function giving uniform numbers in [0, 1)
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
