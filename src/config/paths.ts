import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root (where package.json and specs/ are), whether running from src/ or dist/src/. */
function findPackageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot find the ehr-gateway package root');
    dir = parent;
  }
  return dir;
}

export const packageRoot = findPackageRoot();
export const openRpcSpecPath = path.join(packageRoot, 'specs', 'openrpc.json');
export const openApiSpecPath = path.join(packageRoot, 'specs', 'openapi.yaml');
