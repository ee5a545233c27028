import type { Knex } from 'knex';
import { openWith, previousKeyOf, seal } from './encryption.js';

/**
 * The columns of sealed secrets (AES-256-GCM under the data key, encryption.ts), each described by
 * the domain that owns it, and what `ehr-gateway data-key check|rotate` does with all of them: say
 * under which key every value opens, and re-seal under DATA_KEY what still needs DATA_KEY_PREVIOUS.
 */
export interface SealedColumn {
  table: string;
  column: string;
  /** One unique, ordered column of the row: the pages are read by it, a re-sealed value written by it. */
  idColumn: string;
  /** The columns the value's authenticated data is made from. */
  contextColumns: readonly string[];
  /** The authenticated data the value was sealed with (see the domain's seal function). */
  context(row: Readonly<Record<string, unknown>>): string;
}

export interface SealedColumnReport {
  /** table.column */
  column: string;
  /** Values stored (not null). */
  sealed: number;
  /** Opened with DATA_KEY. */
  current: number;
  /** Opened only with DATA_KEY_PREVIOUS (after a rotation: re-sealed under DATA_KEY, counted in `resealed` too). */
  previous: number;
  /** Re-sealed under DATA_KEY by this run. */
  resealed: number;
  /** Opened with neither key: the secret is lost (a backup restored without its key, or a key dropped too early). */
  unreadable: number;
}

const PAGE = 500;

type Verdict = 'current' | 'previous' | 'unreadable';

function verdictOf(key: Buffer, context: string, sealed: Buffer): { verdict: Verdict; plaintext?: string } {
  try {
    return { verdict: 'current', plaintext: openWith(key, context, sealed) };
  } catch {
    const previous = previousKeyOf(key);
    if (previous) {
      try {
        return { verdict: 'previous', plaintext: openWith(previous, context, sealed) };
      } catch {
        // neither key: below
      }
    }
    return { verdict: 'unreadable' };
  }
}

/**
 * Reads every value of `column` by pages and judges it under `key` (and the key it replaces); with
 * `reseal`, a value that only the previous key opens is sealed again under `key`, written only if
 * the row still holds the value read (a concurrent change, sealed under `key` by the service, wins).
 */
async function sweep(knex: Knex, key: Buffer, column: SealedColumn, reseal: boolean): Promise<SealedColumnReport> {
  const report: SealedColumnReport = { column: `${column.table}.${column.column}`, sealed: 0, current: 0, previous: 0, resealed: 0, unreadable: 0 };
  let after: unknown;
  for (;;) {
    const query = knex(column.table)
      .select(column.idColumn, column.column, ...column.contextColumns)
      .whereNotNull(column.column)
      .orderBy(column.idColumn)
      .limit(PAGE);
    if (after !== undefined) query.where(column.idColumn, '>', after as Knex.Value);
    const rows = (await query) as Record<string, unknown>[];
    for (const row of rows) {
      const sealed = row[column.column] as Buffer;
      const context = column.context(row);
      const { verdict, plaintext } = verdictOf(key, context, sealed);
      report.sealed += 1;
      report[verdict] += 1;
      if (reseal && verdict === 'previous') {
        const updated = await knex(column.table)
          .where(column.idColumn, row[column.idColumn] as Knex.Value)
          .andWhere(column.column, sealed)
          .update({ [column.column]: seal(key, context, plaintext!) });
        report.resealed += updated;
      }
    }
    if (rows.length < PAGE) return report;
    after = rows.at(-1)![column.idColumn];
  }
}

/** Under which key each column's values open. */
export async function checkSealedColumns(knex: Knex, key: Buffer, columns: readonly SealedColumn[]): Promise<SealedColumnReport[]> {
  const reports: SealedColumnReport[] = [];
  for (const column of columns) reports.push(await sweep(knex, key, column, false));
  return reports;
}

/** Re-seals under `key` every value that only its previous key (DATA_KEY_PREVIOUS) opens. Idempotent. */
export async function resealSealedColumns(knex: Knex, key: Buffer, columns: readonly SealedColumn[]): Promise<SealedColumnReport[]> {
  const reports: SealedColumnReport[] = [];
  for (const column of columns) reports.push(await sweep(knex, key, column, true));
  return reports;
}
