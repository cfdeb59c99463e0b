/**
 * The service's signing and sealing secrets (docs/security.md). No secret has a default value in the
 * source: each comes from its environment variable, else (outside production) from
 * `DATA_DIR/secrets/<NAME>`, generated at random on first start (file 0600, directory 0700) and reused
 * on every later start. With NODE_ENV=production a missing variable stops the service.
 *
 * The readers (`callbackSecret`, `mediaUrlSecret`, `loadWebhookSettings`) read `process.env` per call,
 * so {@link ensureServiceSecrets} publishes every resolved value there before anything else runs.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** One secret the service reads from its environment. */
export interface SecretSpec {
  /** Environment variable, also the file name under DATA_DIR/secrets. */
  name: string;
  /** What it protects (docs/security.md). */
  purpose: string;
  /** A fresh random value in the variable's format. */
  generate(): string;
}

/** Every signing or sealing secret the service reads (docs/security.md). */
export const SERVICE_SECRETS: readonly SecretSpec[] = [
  {
    name: 'MEDIA_URL_SECRET',
    purpose: 'HMAC-SHA256 key of signed text-attachment links',
    generate: () => crypto.randomBytes(32).toString('base64url'),
  },
  {
    name: 'CARRIER_CALLBACK_SECRET',
    purpose: 'HMAC-SHA256 key of carrier (10DLC) provider callbacks',
    generate: () => crypto.randomBytes(32).toString('base64url'),
  },
  {
    name: 'WEBHOOK_SECRET_KEY',
    purpose: 'AES-256-GCM key sealing webhook signing secrets at rest (32 bytes, base64)',
    generate: () => crypto.randomBytes(32).toString('base64'),
  },
];

/** File (under DATA_DIR/secrets) holding the embedded Postgres superuser's password; never an env variable. */
export const EMBEDDED_POSTGRES_PASSWORD = 'EMBEDDED_POSTGRES_PASSWORD';

/** A secret the production environment must provide is missing (the entry points print its message alone). */
export class MissingSecretError extends Error {
  constructor(readonly variable: string) {
    super(`${variable} is not set; NODE_ENV=production reads every secret from the environment (npm run cli -- secrets generate prints fresh values)`);
    this.name = 'MissingSecretError';
  }
}

/** `DATA_DIR/secrets`, created owner-only (0700) when missing; an existing one is tightened to 0700. */
export function secretsDir(dataDir: string): string {
  const dir = path.join(dataDir, 'secrets');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
  return dir;
}

/**
 * The value stored in `DATA_DIR/secrets/<name>`, generated with `generate` and written owner-only
 * (0600) when the file does not exist. Two processes starting at once agree: the file is created
 * exclusively and the loser reads the winner's value.
 * @throws when the directory cannot be written or the file is empty
 */
export function storedSecret(dataDir: string, name: string, generate: () => string): string {
  const file = path.join(secretsDir(dataDir), name);
  try {
    fs.writeFileSync(file, generate() + '\n', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  fs.chmodSync(file, 0o600);
  const value = fs.readFileSync(file, 'utf8').trim();
  if (!value) throw new Error(`${file} is empty; delete it to generate a new value`);
  return value;
}

/**
 * Resolves every secret of {@link SERVICE_SECRETS} and publishes it in `process.env`: the variable wins
 * when set; otherwise, outside production, the stored (or newly generated) file under DATA_DIR/secrets.
 * @param opts.production NODE_ENV=production: a missing variable is an error, nothing is generated
 * @param opts.env the environment to read and fill (default `process.env`; tests pass their own)
 * @returns the names taken from DATA_DIR/secrets
 * @throws MissingSecretError in production when a variable is unset
 */
export function ensureServiceSecrets(opts: { dataDir: string; production: boolean; env?: NodeJS.ProcessEnv }): string[] {
  const env = opts.env ?? process.env;
  const fromFiles: string[] = [];
  for (const spec of SERVICE_SECRETS) {
    if (env[spec.name]) continue;
    if (opts.production) throw new MissingSecretError(spec.name);
    env[spec.name] = storedSecret(opts.dataDir, spec.name, spec.generate);
    fromFiles.push(spec.name);
  }
  return fromFiles;
}

/** `NAME=value` lines with fresh values of every secret, for a production deployment's environment. */
export function generateSecretLines(): string[] {
  return SERVICE_SECRETS.map((s) => `${s.name}=${s.generate()}`);
}

/**
 * Fills every unset secret of {@link SERVICE_SECRETS} with a fresh random value for this process (and
 * the children it spawns) only; nothing is stored. For tests and benchmarks, which need no secret to
 * outlive them.
 */
export function useEphemeralSecrets(env: NodeJS.ProcessEnv = process.env): void {
  for (const spec of SERVICE_SECRETS) env[spec.name] ||= spec.generate();
}
