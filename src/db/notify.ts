import pg from 'pg';
import type { Logger } from '../logging/logger.js';

/**
 * PostgreSQL LISTEN/NOTIFY as a wake-up call between processes: a process that committed work tells
 * the others' workers (a hint only: the work itself is in the rows, and idle workers look anyway
 * now and then). A NOTIFY in every committing transaction would serialize the commits on the
 * database's notify lock, so one goes at most once per NOTIFY_INTERVAL_MS however many commits
 * want it: after the commit, in a statement of its own; or, for the first commit after a quiet
 * spell, which has no other commit to contend with, in that commit's own statement (takeTurn).
 */

/**
 * The first commit after a quiet spell notifies at once (an idle worker wakes within a round trip);
 * under load, every 5 ms cost a statement per three or four acknowledgements (make bench,
 * register_document) for workers that are busy anyway.
 */
const NOTIFY_INTERVAL_MS = 20;

/** A notification for a statement to send with its own commit: `select pg_notify(channel, payload)` in it. */
export interface Notification {
  channel: string;
  payload: string;
}

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

  /**
   * The notification, when one would go at once (none under way, the interval passed), for the
   * caller's statement to send with its commit; counted as sent. Otherwise undefined: call notify()
   * after the commit. At a steady trickle of requests this spares one statement (a round trip and a
   * wake-up of this process) per request; under load the turn is rarely free and nothing changes.
   */
  takeTurn(): Notification | undefined {
    if (this.inFlight || Date.now() < this.lastSentAt + NOTIFY_INTERVAL_MS) return undefined;
    this.lastSentAt = Date.now();
    return { channel: this.channel, payload: this.payload };
  }

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
