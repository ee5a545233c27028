/**
 * Builds what the service's web pages load into dist/docs/ (served at /docs by the service): the
 * OpenRPC docs (React, from @open-rpc/docs-react), Redoc's standalone bundle for OpenAPI, the
 * delivery console's script (/console), and the getting-started page's sequence diagrams, rendered
 * to SVG from src/docs/flows/*.mmd (one source per language).
 *   tsx scripts/build-docs.ts
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { createRequire } from 'node:module';
import { build } from 'esbuild';
import { flowFile, FLOWS } from '../src/docs/flows.ts';
import { LANGUAGES } from '../src/docs/language.ts';
import { renderSequenceDiagram } from '../src/docs/sequence-diagram.ts';
import { commandLine } from './lib/command-line.ts';

const root = path.resolve(import.meta.dirname, '..');
const outDir = path.join(root, 'dist', 'docs');

const HELP = `usage: tsx scripts/build-docs.ts

Builds the /docs and /console page scripts and diagrams into dist/docs/.

options:
  -h, --help   this text

example: tsx scripts/build-docs.ts`;

commandLine('build-docs', HELP, { options: {} });

/** Write-then-rename, so that a service serving dist/docs never reads a half-written file. */
async function writeAtomically(file: string, content: string | Uint8Array): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await fs.writeFile(temporary, content);
  await fs.rename(temporary, file);
}

await fs.mkdir(outDir, { recursive: true });
const bundle = await build({
  entryPoints: { 'openrpc-docs': path.join(root, 'src/docs/client/openrpc-docs.tsx'), console: path.join(root, 'src/console/client/console.ts') },
  outdir: outDir,
  write: false,
  bundle: true,
  minify: true,
  format: 'iife',
  target: 'es2020',
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'warning',
  legalComments: 'linked',
});
for (const output of bundle.outputFiles) await writeAtomically(output.path, output.contents);
const require = createRequire(import.meta.url);
// Redoc's sidebar loads its vendor's logo from a CDN, and has no option to turn that off:
// point it at an inline image so that the page loads nothing from outside the service.
const redocLogo = 'https://cdn.redoc.ly/redoc/logo-mini.svg';
const redoc = await fs.readFile(require.resolve('redoc/bundles/redoc.standalone.js'), 'utf8');
if (!redoc.includes(redocLogo)) throw new Error(`redoc bundle no longer references ${redocLogo}: re-check what it loads from outside`);
await writeAtomically(
  path.join(outDir, 'redoc.standalone.js'),
  redoc.replace(redocLogo, 'data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22/%3E'),
);
// Redoc starts from a file too: the pages' Content-Security-Policy allows no inline script.
await writeAtomically(
  path.join(outDir, 'redoc-init.js'),
  `Redoc.init('/docs/openapi.yaml', { expandResponses: '200', hideDownloadButton: false }, document.getElementById('redoc'));\n`,
);
await fs.mkdir(path.join(outDir, 'flows'), { recursive: true });
for (const flow of FLOWS) {
  for (const language of LANGUAGES) {
    const source = await fs.readFile(path.join(root, 'src/docs/flows', flowFile(flow.id, language, 'mmd')), 'utf8');
    await writeAtomically(path.join(outDir, 'flows', flowFile(flow.id, language, 'svg')), renderSequenceDiagram(source, flow.title[language], flow.id));
  }
}
console.log(`docs: bundled into ${path.relative(root, outDir)}/`);
