/**
 * The retry policy of callbacks, in one place: CALLBACK_RETRY_SCHEDULE gives one delay per attempt
 * (the first before the first attempt, counted from when the callback fell due; each further one
 * after the attempt before). After the last, the callback has failed until it is replayed. An
 * attempt the circuit breaker postponed (circuit-breaker.ts) counts as an attempt here: the receiver
 * had just stopped answering, and the schedule's end stays a day away, not forever.
 */

/** When the attempt after `roundAttempts` attempts of this round goes (ms from now), or null when the schedule is exhausted. */
export function nextAttemptInMs(scheduleMs: readonly number[], roundAttempts: number): number | null {
  return roundAttempts >= scheduleMs.length ? null : scheduleMs[roundAttempts]!;
}
