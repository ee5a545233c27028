import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { CLASSIFIER_305, CLASSIFIER_BY_MNEMONIC } from '../../src/emdr/errors/classifier-305.js';
import {
  CALLBACK_GATEWAY_CODES,
  ERROR_CODES,
  GATEWAY_CODES,
  GATEWAY_USES,
  HTTP_ERROR_CODES,
  specCodeLists,
  WARNING_CODES,
} from '../../src/emdr/errors/codes.js';
import { repoRoot } from '../support/cli.js';

/**
 * The classifier table against its public transcription (GitHub asaf1n/EGISZ-Proxy-Reports-Airflow,
 * db/01_schema.sql, INSERT INTO dim_nsi_error_code: 127 rows, the classifier's FRLLO_RELISE_POSITION_ERROR
 * kept once, at id 85, and its id 88 named in a comment). The figures below were taken from that
 * file (commit b41c330); to take them again:
 *   sed -n "/INSERT INTO dim_nsi_error_code (/,/ON CONFLICT/p" db/01_schema.sql | grep -oP "^    \('\K[A-Z_]+', \d+" \
 *     | awk -F"', " '{print $2" "$1}' | sort -n | sha256sum
 * gives IDS_AND_MNEMONICS; the same lines with the description after the mnemonic (the SQL's '' as ')
 * give IDS_MNEMONICS_AND_MEANINGS.
 */
const TRANSCRIPTION_ROWS = 127;
const IDS_AND_MNEMONICS = '7c887c5c46cde7a65a563dfd797bc2f6491b10d7a53b427ce1fb958dba9b48cf';
const IDS_MNEMONICS_AND_MEANINGS = 'b1d23e9df073f3e39836f6b7d29894ad640375d82a352e7315530c0a6dfc0c0c';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const transcribed = CLASSIFIER_305.filter((entry) => entry.id !== 88);

describe('classifier 1.2.643.5.1.13.13.99.2.305 v3.18 as data', () => {
  it('holds all 128 codes, ids 1 to 128 each once', () => {
    expect(CLASSIFIER_305).toHaveLength(128);
    expect(CLASSIFIER_305.map((entry) => entry.id)).toEqual(Array.from({ length: 128 }, (_, index) => index + 1));
  });

  it("has the transcription's ids, mnemonics and descriptions, and its id 88 as the second FRLLO_RELISE_POSITION_ERROR", () => {
    expect(transcribed).toHaveLength(TRANSCRIPTION_ROWS);
    expect(sha256(transcribed.map((entry) => `${entry.id} ${entry.mnemonic}\n`).join(''))).toBe(IDS_AND_MNEMONICS);
    expect(sha256(transcribed.map((entry) => `${entry.id} ${entry.mnemonic} ${entry.meaningRu}\n`).join(''))).toBe(IDS_MNEMONICS_AND_MEANINGS);
    const twice = CLASSIFIER_305.filter((entry) => entry.mnemonic === 'FRLLO_RELISE_POSITION_ERROR');
    expect(twice.map((entry) => entry.id)).toEqual([85, 88]);
    expect(CLASSIFIER_BY_MNEMONIC.get('FRLLO_RELISE_POSITION_ERROR')!.id).toBe(85);
    expect(new Set(CLASSIFIER_305.map((entry) => entry.mnemonic)).size).toBe(127);
    expect(CLASSIFIER_305.every((entry) => entry.meaning.length > 0)).toBe(true);
  });

  it("lists every classifier code in the gateway's catalog with its id, and gateway codes that no classifier code spells", () => {
    for (const entry of CLASSIFIER_305) expect(ERROR_CODES[entry.mnemonic as keyof typeof ERROR_CODES].id).toBe(CLASSIFIER_BY_MNEMONIC.get(entry.mnemonic)!.id);
    for (const code of Object.keys(GATEWAY_CODES)) {
      expect(CLASSIFIER_BY_MNEMONIC.has(code), code).toBe(false);
      expect(ERROR_CODES[code as keyof typeof ERROR_CODES].id).toBeNull();
    }
    expect(Object.keys(ERROR_CODES)).toHaveLength(127 + Object.keys(GATEWAY_CODES).length);
    for (const code of [...HTTP_ERROR_CODES, ...CALLBACK_GATEWAY_CODES, ...WARNING_CODES, ...Object.keys(GATEWAY_USES)])
      expect(ERROR_CODES).toHaveProperty(code);
  });

  it('answers a wrong token and non-well-formed XML with gateway codes, not ACCESS_DENIED and XML_VALIDATION_ERROR', () => {
    expect(HTTP_ERROR_CODES).toContain('UNAUTHENTICATED');
    expect(HTTP_ERROR_CODES).not.toContain('ACCESS_DENIED');
    expect(CALLBACK_GATEWAY_CODES).toContain('XML_NOT_WELL_FORMED');
    expect(GATEWAY_USES).not.toHaveProperty('XML_VALIDATION_ERROR');
    expect(GATEWAY_USES).not.toHaveProperty('ACCESS_DENIED');
  });

  it("gives the spec's enums of codes (scripts/spec-codes.ts writes them): the classifier's 128 in callbacks' errors", () => {
    const spec = parseYaml(fs.readFileSync(path.join(repoRoot, 'specs/openapi.yaml'), 'utf8')) as {
      components: { schemas: Record<string, { properties: { code: { 'x-extensible-enum': string[] } } }> };
    };
    for (const [schema, codes] of Object.entries(specCodeLists())) {
      expect(spec.components.schemas[schema]!.properties.code['x-extensible-enum'], `${schema}.code: run tsx scripts/spec-codes.ts`).toEqual(codes);
    }
    expect(specCodeLists().CallbackError).toEqual(expect.arrayContaining([...new Set(CLASSIFIER_305.map((entry) => entry.mnemonic))]));
  });
});
