/**
 * Password hashing for members (docs/team-and-oauth.md "Team"): argon2id through `@node-rs/argon2` (prebuilt native
 * binding, no install script), with the OWASP Password Storage Cheat Sheet's minimum for argon2id
 * (19 MiB memory, 2 iterations, 1 lane) and the library's PHC string format, which carries its parameters.
 */
import { hash, verify, type Algorithm } from '@node-rs/argon2';

/** argon2id (the library's `Algorithm.Argon2id`; a const enum, so spelled out). */
const ARGON2ID = 2 as Algorithm;
const OPTIONS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 };

/** The PHC-format argon2id hash of a password. */
export function hashPassword(password: string): Promise<string> {
  return hash(password, OPTIONS);
}

/** A hash of no password, verified against when the email is unknown so both cases take the same time. */
let decoy: Promise<string> | undefined;

/**
 * True when `password` matches `stored`; with no stored hash it still spends one verification (against a
 * decoy) so an unknown email cannot be told apart by timing.
 */
export async function verifyPassword(stored: string | null | undefined, password: string): Promise<boolean> {
  if (!stored) {
    decoy ??= hashPassword('decoy password that never matches');
    await verify(await decoy, password).catch(() => false);
    return false;
  }
  return verify(stored, password).catch(() => false);
}
