import pg from 'pg';
import type { Logger } from '../logging/logger.js';

/**
 * PostgreSQL LISTEN/NOTIFY as a wake-up call between processes: a process that committed work tells
 * the others' workers (a hint only: the work itself is in the rows, and idle workers look anyway
 * now and then). A NOTIFY in the committing transaction would serialize every commit on the
 * database's notify lock, so it goes after the commit, in a statement of its own, at most once
 * per NOTIFY_INTERVAL_MS however many commits want it.
 */

/**
 * The first commit after a quiet spell notifies at once (an idle worker wakes within a round trip);
 * under load, every 5 ms cost a statement per three or four acknowledgements (make bench,
 * register_document) for workers that are busy anyway.
 */
const NOTIFY_INTERVAL_MS = 20;

/** Sends `channel` notifications with `payload` (what kind of work: listeners may wake only what it concerns), coalesced. */
export class Notifier {
  private inFlight = false;
  private again = false;
  private lastSentAt = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly channel: string,
    private readonly logger: Logger,
    private readonly payload = '',
  ) {}

  notify(): void {
    if (this.inFlight) {
      this.again = true;
      return;
    }
    this.inFlight = true;
    const wait = this.lastSentAt + NOTIFY_INTERVAL_MS - Date.now();
    const send = () => {
      this.lastSentAt = Date.now();
      this.pool
        .query({ name: 'notify_work', text: 'select pg_notify($1, $2)', values: [this.channel, this.payload] })
        .catch((error: unknown) =>
          this.logger.warn(
            { code: (error as { code?: unknown }).code, channel: this.channel },
            'notify failed (idle workers find the work on their next look)',
          ),
        )
        .finally(() => {
          this.inFlight = false;
          if (this.again) {
            this.again = false;
            this.notify();
          }
        });
    };
    if (wait > 0) setTimeout(send, wait).unref();
    else send();
  }
}

export interface Listening {
  stop(): Promise<void>;
}

/** How long a lost listening connection waits before it connects again. */
const RECONNECT_MS = 1000;

/**
 * Calls `onNotify` with the payload of each notification on `channel`, on a connection of its own
 * that comes back after a loss (and once it is connected, with an empty payload, in case work was
 * announced while it was not). Resolves once the first connection listens or failed; a failed one
 * is tried again in the background.
 */
export async function listen(url: string, channel: string, onNotify: (payload: string) => void, logger: Logger): Promise<Listening> {
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    const next = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
    const lost = () => {
      if (client !== next || stopped) return;
      client = undefined;
      logger.warn({ channel }, 'listening connection lost; connecting again');
      retry = setTimeout(() => void connect().catch(() => undefined), RECONNECT_MS);
    };
    next.on('error', lost);
    next.on('end', lost);
    next.on('notification', (message) => onNotify(message.payload ?? ''));
    client = next;
    try {
      await next.connect();
      await next.query(`listen ${next.escapeIdentifier(channel)}`);
      // Work may have been announced while this connection was down.
      onNotify('');
    } catch (error) {
      lost();
      throw error;
    }
  };

  await connect().catch((error: unknown) =>
    logger.warn(
      { code: (error as { code?: unknown }).code, channel },
      'cannot listen for work notifications yet (workers look for work every second meanwhile)',
    ),
  );
  return {
    async stop() {
      stopped = true;
      clearTimeout(retry);
      await client?.end().catch(() => undefined);
    },
  };
}
