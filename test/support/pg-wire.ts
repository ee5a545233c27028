/**
 * Reads the client's side of PostgreSQL's wire protocol (as a TCP proxy sees it) and counts the
 * statements it sends: a simple query ('Q') is one, and so is each Sync ('S') that ends an extended
 * query (node-postgres sends Parse/Bind/Execute/Sync per statement). The first message of a
 * connection (startup, or an SSL request) has no type byte.
 */
export interface StatementCounter {
  /** Statements sent so far on every connection. */
  readonly count: number;
  /** What each was, in order: a prepared statement's name (an unnamed one's text), or a simple query's text (for failure messages). */
  readonly sent: readonly string[];
  /** A reader for one new connection's client bytes. */
  connection(): (chunk: Buffer) => void;
}

/** A NUL-terminated string of a message's body from `offset`, and where the next field starts. */
function cstring(message: Buffer, offset: number): [string, number] {
  const end = message.indexOf(0, offset);
  return [message.toString('utf8', offset, end), end + 1];
}

export function statementCounter(): StatementCounter {
  let count = 0;
  const sent: string[] = [];
  return {
    get count() {
      return count;
    },
    sent,
    connection() {
      let pending = Buffer.alloc(0);
      let started = false;
      /** The statement of the extended query under way: named at Bind, its text at Parse. */
      let parsed = '';
      let bound = '';
      return (chunk) => {
        pending = Buffer.concat([pending, chunk]);
        for (;;) {
          const header = started ? 5 : 4;
          if (pending.length < header) return;
          const length = pending.readUInt32BE(started ? 1 : 0);
          const total = started ? 1 + length : length;
          if (pending.length < total) return;
          if (started) {
            const type = String.fromCharCode(pending[0]!);
            if (type === 'P') {
              const [name, next] = cstring(pending, 5);
              parsed = name || cstring(pending, next)[0].slice(0, 80);
            } else if (type === 'B') bound = cstring(pending, cstring(pending, 5)[1])[0] || parsed;
            else if (type === 'Q') {
              count += 1;
              sent.push(cstring(pending, 5)[0].slice(0, 80));
            } else if (type === 'S') {
              count += 1;
              sent.push(bound);
            }
          } else if (pending.readUInt32BE(4) !== 80877103) started = true; // not an SSLRequest: the startup message
          pending = pending.subarray(total);
        }
      };
    },
  };
}
