import kindsTable from './kinds-1520.json' with { type: 'json' };
import type { CallbackErrorItem } from '../errors/codes.js';

/**
 * The kinds of structured medical documents (СЭМД), NSI 1.2.643.5.1.13.13.11.1520, as data: each
 * code with its name and the period the registry accepts it in (`validFrom`, `validTo` exclusive,
 * dates). kinds-1520.json holds the 232 kinds of the public transcription in GitHub
 * asaf1n/EGISZ-Proxy-Reports-Airflow, db/01_schema.sql, table dim_semd_types (commit b41c330);
 * an operator adds a kind, or corrects a period, by editing that file (one entry a line) and
 * restarting the service. Not checked against nsi.rosminzdrav.ru itself.
 */
export interface DocumentKind {
  code: string;
  name: string;
  validFrom: string;
  validTo?: string;
}

export const DOCUMENT_KINDS: ReadonlyMap<string, DocumentKind> = new Map((kindsTable as DocumentKind[]).map((kind) => [kind.code, kind]));

/** The registry's refusals of a kind the gateway can predict: unknown (OBJECT_NOT_FOUND), or not in force on the document's creation date (NO_DOCUMENT_KIND_ON_DATE). */
export function kindFindings(code: string, creationDateTime: string, kinds: ReadonlyMap<string, DocumentKind> = DOCUMENT_KINDS): CallbackErrorItem[] {
  const kind = kinds.get(code);
  if (!kind) return [{ code: 'OBJECT_NOT_FOUND', message: `kind: ${code} is not a document kind of NSI 1.2.643.5.1.13.13.11.1520 known to this gateway` }];
  // The creation date as the document writes it (its own offset), compared with the kind's dates.
  const date = creationDateTime.slice(0, 10);
  if (date < kind.validFrom || (kind.validTo !== undefined && date >= kind.validTo)) {
    const period = kind.validTo === undefined ? `from ${kind.validFrom}` : `from ${kind.validFrom} until ${kind.validTo}`;
    return [
      { code: 'NO_DOCUMENT_KIND_ON_DATE', message: `kind: ${code} (${kind.name}) is registered ${period}, not on ${date}, the document's creation date` },
    ];
  }
  return [];
}
