import type pg from 'pg';

/**
 * The runtime's access to PostgreSQL: plain node-postgres with named prepared statements (each
 * statement is parsed and planned once per connection), a pool, and transactions. knex stays for
 * migrations and the CLI's bulk writes; nothing on a request or worker path builds SQL at run time.
 */

/** A statement with a name: prepared on a connection the first time it runs there. */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

const names = new Set<string>();

/** Declares a named statement; its name must be unique in the program (two texts under one name would collide on a connection). */
export function statement(name: string, text: string): Statement {
  if (names.has(name)) throw new Error(`SQL statement name ${name} is declared twice`);
  names.add(name);
  return { name, text };
}

/** What runs statements: the pool, or one connection inside a transaction. */
export interface Queryable {
  rows<R>(statement: Statement, values?: readonly unknown[]): Promise<R[]>;
  /** The first row, or undefined. */
  row<R>(statement: Statement, values?: readonly unknown[]): Promise<R | undefined>;
  /** The number of rows the statement touched. */
  run(statement: Statement, values?: readonly unknown[]): Promise<number>;
}

function queryable(client: pg.Pool | pg.PoolClient): Queryable {
  const execute = (statement: Statement, values: readonly unknown[] = []) =>
    client.query({ name: statement.name, text: statement.text, values: values as unknown[] });
  return {
    rows: async <R>(statement: Statement, values?: readonly unknown[]) => (await execute(statement, values)).rows as R[],
    row: async <R>(statement: Statement, values?: readonly unknown[]) => (await execute(statement, values)).rows[0] as R | undefined,
    run: async (statement, values) => (await execute(statement, values)).rowCount ?? 0,
  };
}

export class Sql implements Queryable {
  private readonly onPool: Queryable;

  constructor(readonly pool: pg.Pool) {
    this.onPool = queryable(pool);
  }

  rows<R>(statement: Statement, values?: readonly unknown[]): Promise<R[]> {
    return this.onPool.rows<R>(statement, values);
  }

  row<R>(statement: Statement, values?: readonly unknown[]): Promise<R | undefined> {
    return this.onPool.row<R>(statement, values);
  }

  run(statement: Statement, values?: readonly unknown[]): Promise<number> {
    return this.onPool.run(statement, values);
  }

  /** Runs `work` in a transaction on one connection: committed when it resolves, rolled back when it throws. */
  async transaction<T>(work: (trx: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken = false;
    try {
      await client.query('begin');
      const result = await work(queryable(client));
      await client.query('commit');
      return result;
    } catch (error) {
      try {
        await client.query('rollback');
      } catch {
        // The connection is gone: it must not go back to the pool.
        broken = true;
      }
      throw error;
    } finally {
      client.release(broken);
    }
  }
}

/** PostgreSQL's deadlock_detected and serialization_failure: the statement may simply run again. */
const RETRYABLE = new Set(['40P01', '40001']);
const RETRIES = 3;

/**
 * Runs a statement again when PostgreSQL chose it as the victim of a deadlock (the pipeline's
 * settling statements are idempotent: each guards on the state it changes), rather than leaving
 * its batch to come back when the leases end.
 */
export async function retryOnDeadlock<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= RETRIES || !RETRYABLE.has((error as { code?: string }).code ?? '')) throw error;
    }
  }
}
