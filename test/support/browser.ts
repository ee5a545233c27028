import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { repoRoot } from './cli.js';

/** Debian's Chromium (`make browser` installs it); never a browser download of playwright's own. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`no Chromium at ${CHROMIUM_PATH}: run \`make browser\` (Debian's chromium package)`);
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    // Flags for a closed network and a root user: no sandbox, no background connections.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * A screenshot of the whole page into test-results/NAME.png (the test output, kept out of git): the
 * viewport is grown to the page's height first (Chromium's own full-page capture hangs here).
 */
export async function screenshot(page: Page, name: string): Promise<string> {
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  await page.setViewportSize({ width: page.viewportSize()?.width ?? 1280, height: Math.min(Math.max(height, 600), 6000) });
  const file = path.join(repoRoot, 'test-results', `${name}.png`);
  await fs.mkdir(path.dirname(file), { recursive: true });
  await page.screenshot({ path: file });
  process.stdout.write(`screenshot: ${path.relative(repoRoot, file)}\n`);
  return file;
}
