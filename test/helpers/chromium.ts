/**
 * Headless Chromium for the browser tests (README "Quick start": Debian's `chromium`, or `CHROMIUM_PATH`):
 * found once, skipped with a message when missing, except under CI where a missing browser fails the run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';

/** Where browser tests save their screenshots (git-ignored). */
export const ARTIFACTS = path.join(__dirname, '..', '..', 'test-artifacts');

function findChromium(): string | undefined {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];
  return candidates.find((p): p is string => !!p && fs.existsSync(p));
}

/**
 * Launches headless Chromium for a suite's `before` hook, or skips the suite when none is installed.
 * @param extraArgs more command-line switches (e.g. `--use-fake-device-for-media-stream` for a fake microphone)
 * @throws Error under `CI` when no Chromium is found (.ci/run installs Debian's)
 */
export async function launchChromium(ctx: Mocha.Context, extraArgs: string[] = []): Promise<Browser> {
  const executablePath = findChromium();
  if (!executablePath) {
    if (process.env.CI) throw new Error("No Chromium found: .ci/run installs Debian's chromium; set CHROMIUM_PATH otherwise");
    console.warn("    (skipped: no Chromium found; install Debian's chromium or set CHROMIUM_PATH)");
    ctx.skip();
  }
  return chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage', ...extraArgs] });
}
