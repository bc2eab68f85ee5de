import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { REQUIRE_INFRA } from './infra';
import { ROOT } from './gateway';

/** Debian's Chromium (apt package `chromium`), which CI installs; no browser is downloaded. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const HAS_CHROMIUM = fs.existsSync(CHROMIUM_PATH);

/** Screenshots of the browser tests, kept with the test output (the README shows some). */
export const SCREENSHOT_DIR = path.join(ROOT, 'test-output', 'screenshots');

/**
 * `describe` when Chromium is on the machine; else skipped, or a failing test under
 * REQUIRE_INFRA=1 (CI), so a missing browser never passes for a green run.
 */
export function describeInBrowser(name: string, fn: () => void): void {
  if (HAS_CHROMIUM) return describe(name, fn);
  if (REQUIRE_INFRA) {
    return describe(name, () => {
      it('needs Chromium', () => {
        throw new Error(`Chromium is required (REQUIRE_INFRA=1) but not found at ${CHROMIUM_PATH}`);
      });
    });
  }
  describe.skip(name, fn);
}

/**
 * Headless Chromium as the machine allows it: no sandbox (tests run as root), and none of the
 * background connections to Google's services this machine's closed network refuses.
 */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}

export function screenshotPath(name: string): string {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  return path.join(SCREENSHOT_DIR, `${name}.png`);
}
