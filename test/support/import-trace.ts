import { spawn } from 'node:child_process';

/** The loader's own packages, present in every trace run through tsx. */
const LOADER_PACKAGES = new Set(['tsx', 'esbuild', 'get-tsconfig', 'resolve-pkg-maps']);

/**
 * The npm packages a fresh Node process loads when it imports `modulePath` (through tsx, as the
 * tests run the source): those of the CommonJS module cache (every package that is CommonJS, or
 * that CommonJS code requires) and those of every ES module resolved (a module hook sees each).
 * Runs in a child so the caller's own imports do not count.
 */
export async function packagesLoadedBy(modulePath: string, cwd: string): Promise<string[]> {
  const script = `
    import { createRequire, registerHooks } from 'node:module';
    import { fileURLToPath } from 'node:url';
    const require = createRequire(import.meta.url);
    const resolved = new Set();
    registerHooks({ resolve(specifier, context, next) { const result = next(specifier, context); if (result.url.startsWith('file:')) resolved.add(fileURLToPath(result.url)); return result; } });
    await import(${JSON.stringify(modulePath)});
    const packages = new Set();
    for (const file of [...Object.keys(require.cache), ...resolved]) {
      const at = file.lastIndexOf('node_modules/');
      const match = at < 0 ? null : /^((?:@[^/]+\\/)?[^/]+)\\//.exec(file.slice(at + 'node_modules/'.length));
      if (match) packages.add(match[1]);
    }
    process.stdout.write(JSON.stringify([...packages]));`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`importing ${modulePath} failed (${code}): ${stderr}`);
  return (JSON.parse(stdout) as string[]).filter((name) => !LOADER_PACKAGES.has(name)).sort();
}
