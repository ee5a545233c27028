/**
 * Writes the RegisterDocument example of specs/openapi.yaml (and the document file of the
 * SendDocumentFileResultResponse example: the same document, as registered) from a sample made by
 * `document sample`'s code: a real document with real detached GOST signatures by fresh test keys,
 * for the demo clinic of `make run` (its callback URL). Run it when the sample changes, and commit
 * the spec:
 *   tsx scripts/spec-examples.ts
 * The test certificates are valid from 2026-01-01 to 2036-01-01, so the example stays acceptable
 * until then (a signature is checked against its certificate's validity at its signing time).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { parseDocument, type Scalar } from 'yaml';
import { createSample } from '../src/emdr/demo/sample-document.ts';
import { commandLine } from './lib/command-line.ts';

const HELP = `usage: tsx scripts/spec-examples.ts

Signs the RegisterDocument example of specs/openapi.yaml anew.

options:
  -h, --help   this text

example: tsx scripts/spec-examples.ts`;

commandLine('spec-examples', HELP, { options: {} });

type Path = (string | number)[];
const specPath = path.resolve(import.meta.dirname, '../specs/openapi.yaml');
const source = await fs.readFile(specPath, 'utf8');
const spec = parseDocument(source);
const example: Path = ['components', 'schemas', 'RegisterDocumentRequest', 'examples', 0];
const file: Path = ['components', 'schemas', 'SendDocumentFileResultResponse', 'examples', 0, 'document'];
const localUid = String(spec.getIn([...example, 'localUid']));
const sample = await createSample({
  localUid,
  documentNumber: String(spec.getIn([...example, 'documentNumber'])),
  createdAt: new Date(String(spec.getIn([...example, 'creationDateTime']))),
  certificateValidity: { notBefore: new Date('2026-01-01T00:00:00Z'), notAfter: new Date('2036-01-01T00:00:00Z') },
});
const { personalSignatures, ...members } = sample.request;
const replacements: Array<[Path, string]> = [
  ...Object.entries(members).map(([key, value]): [Path, string] => [[...example, key], String(value)]),
  [[...example, 'personalSignatures', 0, 'signer', 'snils'], personalSignatures![0]!.signer.snils],
  [[...example, 'personalSignatures', 0, 'signature'], personalSignatures![0]!.signature],
  [[...file, 'content'], sample.request.document],
  [[...file, 'signature'], sample.request.signature],
];
// Each value replaces its scalar in the text, so the rest of the file keeps its formatting.
const edits = replacements
  .filter(([where, value]) => String(spec.getIn(where)) !== value)
  .map(([where, value]) => {
    const node = spec.getIn(where, true) as Scalar | undefined;
    if (!node?.range) throw new Error(`specs/openapi.yaml has no scalar at ${where.join('/')}`);
    const plain = /^[A-Za-z0-9+/=.:-]+$/.test(value) && !/^[0-9.+-]+$/.test(value);
    return { start: node.range[0], end: node.range[1], text: plain ? value : `'${value.replaceAll("'", "''")}'` };
  });
let text = source;
for (const edit of edits.sort((left, right) => right.start - left.start)) text = text.slice(0, edit.start) + edit.text + text.slice(edit.end);
await fs.writeFile(specPath, text);
console.log(`specs/openapi.yaml: the RegisterDocument example ${localUid} signed anew`);
