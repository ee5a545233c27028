/**
 * Writes the known error codes into specs/openapi.yaml from the gateway's catalog (src/emdr/errors/codes.ts,
 * which reads the classifier table src/emdr/errors/classifier-305.ts): the `x-extensible-enum` of
 * `ErrorItem.code` (HTTP answers), `CallbackError.code` (the classifier's codes and the gateway's of
 * callbacks) and `CallbackWarning.code`. Run it when the catalog changes, and commit the spec:
 *   tsx scripts/spec-codes.ts
 * test/emdr/classifier.test.ts fails while the spec differs.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { parseDocument, type Node } from 'yaml';
import { specCodeLists } from '../src/emdr/errors/codes.ts';
import { commandLine } from './lib/command-line.ts';

const HELP = `usage: tsx scripts/spec-codes.ts

Writes the error codes of src/emdr/errors/codes.ts into the enums of specs/openapi.yaml.

options:
  -h, --help   this text

example: tsx scripts/spec-codes.ts`;

commandLine('spec-codes', HELP, { options: {} });

const specPath = path.resolve(import.meta.dirname, '../specs/openapi.yaml');
const source = await fs.readFile(specPath, 'utf8');
const spec = parseDocument(source);
// Each list replaces its node in the text, so the rest of the file keeps its formatting.
const edits = Object.entries(specCodeLists()).map(([schema, codes]) => {
  const node = spec.getIn(['components', 'schemas', schema, 'properties', 'code', 'x-extensible-enum'], true) as Node | undefined;
  if (!node?.range) throw new Error(`specs/openapi.yaml: no x-extensible-enum at components/schemas/${schema}/properties/code`);
  return { start: node.range[0], end: node.range[1], text: `[${codes.join(', ')}]` };
});
let text = source;
for (const edit of edits.sort((left, right) => right.start - left.start)) text = text.slice(0, edit.start) + edit.text + text.slice(edit.end);
await fs.writeFile(specPath, text);
console.log(
  `specs/openapi.yaml: ${Object.entries(specCodeLists())
    .map(([schema, codes]) => `${schema}.code ${codes.length} codes`)
    .join(', ')}`,
);
