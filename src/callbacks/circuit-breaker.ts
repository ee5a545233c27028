/**
 * A circuit breaker per receiver origin (scheme, host and port), in each worker process: a receiver
 * that leaves `threshold` attempts in a row without an answer (no answer within CALLBACK_TIMEOUT,
 * or no connection) opens its circuit for `cooldownMs`. While it is open, its callbacks are not
 * sent: each attempt is recorded as postponed and goes to its next time by the retry policy
 * (retry-policy.ts), so a dead receiver no longer holds a delivery place for the timeout of every
 * callback. Then the circuit is half-open: one attempt goes as a probe (the others are postponed
 * meanwhile); an answer of any HTTP status closes the circuit, no answer opens it again for twice
 * as long (at most `maxCooldownMs`). An HTTP error is an answer: the receiver is there, the attempt
 * cost little, and the retry schedule deals with it.
 */

export type CircuitState = 'closed' | 'open' | 'half-open';

interface Circuit {
  /** Attempts in a row without an answer. */
  silent: number;
  openUntil: number;
  cooldownMs: number;
  /** A half-open circuit's probe is out. */
  probing: boolean;
}

export interface CircuitBreakerOptions {
  threshold: number;
  cooldownMs: number;
  maxCooldownMs?: number;
  now?: () => number;
}

/** What to do with an attempt: send it (a probe, when the circuit is half-open), or postpone it. */
export type Admission = { send: true; probe: boolean } | { send: false; reason: string };

/** Circuits remembered at most (receivers that stopped answering); the oldest closed ones go first. */
const REMEMBERED = 10_000;

export class CircuitBreaker {
  private readonly circuits = new Map<string, Circuit>();
  private readonly now: () => number;
  private readonly maxCooldownMs: number;

  constructor(private readonly options: CircuitBreakerOptions) {
    this.now = options.now ?? Date.now;
    this.maxCooldownMs = options.maxCooldownMs ?? Math.max(options.cooldownMs, 10 * 60_000);
  }

  state(origin: string): CircuitState {
    const circuit = this.circuits.get(origin);
    if (!circuit || circuit.silent < this.options.threshold) return 'closed';
    return this.now() < circuit.openUntil ? 'open' : 'half-open';
  }

  /** Circuits open or half-open now. */
  get opened(): number {
    let count = 0;
    for (const circuit of this.circuits.values()) if (circuit.silent >= this.options.threshold) count += 1;
    return count;
  }

  admit(origin: string): Admission {
    const circuit = this.circuits.get(origin);
    const state = this.state(origin);
    if (state === 'closed') return { send: true, probe: false };
    const why = `not sent: ${origin} left ${circuit!.silent} attempts in a row without an answer (circuit open)`;
    if (state === 'open' || circuit!.probing) return { send: false, reason: why };
    circuit!.probing = true;
    return { send: true, probe: true };
  }

  /** An attempt's outcome: whether the receiver answered (any HTTP status). */
  record(origin: string, answered: boolean, probe: boolean): void {
    const circuit = this.circuits.get(origin);
    if (answered) {
      this.circuits.delete(origin);
      return;
    }
    const now = this.now();
    if (!circuit) {
      if (this.circuits.size >= REMEMBERED) this.forgetOneClosed();
      this.circuits.set(origin, { silent: 1, openUntil: 0, cooldownMs: this.options.cooldownMs, probing: false });
      if (this.options.threshold <= 1) this.circuits.get(origin)!.openUntil = now + this.options.cooldownMs;
      return;
    }
    circuit.silent += 1;
    if (probe) {
      circuit.probing = false;
      circuit.cooldownMs = Math.min(this.maxCooldownMs, circuit.cooldownMs * 2);
      circuit.openUntil = now + circuit.cooldownMs;
    } else if (circuit.silent === this.options.threshold) circuit.openUntil = now + circuit.cooldownMs;
  }

  private forgetOneClosed(): void {
    for (const [origin, circuit] of this.circuits) {
      if (circuit.silent < this.options.threshold) {
        this.circuits.delete(origin);
        return;
      }
    }
    this.circuits.delete(this.circuits.keys().next().value!);
  }
}
