import type { ClinicAccount } from './clients.js';

/**
 * Successful clinic authentications of this process, kept for a few seconds (CLINIC_AUTH_CACHE), so
 * that a clinic's requests do not each cost a PostgreSQL lookup. Beside the M4 abuser (refused with
 * 429 about a thousand times a second) that lookup was a third of the event loop's time and queued
 * the honest clinic's queries behind its own in the pool (docs/hostile.md).
 *
 * Only successes are kept, under the presented token's hash: a wrong token never matches and is
 * looked up as before. What it costs: a token revoked, rotated out, or an account disabled or
 * changed (`clients …`, another process) is still accepted here for up to the cache's time
 * (docs/security.md).
 */

/** Entries at most; beyond, the expired ones go, and if none had, all (only valid credentials get in). */
const MAX_ENTRIES = 10_000;

interface Entry {
  account: ClinicAccount;
  expiresAt: number;
}

export class ClinicAuthCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The account authenticated by these headers (the token by its hash) within the last ttlMs, or undefined. */
  get(businessId: string, user: string, tokenHash: Buffer): ClinicAccount | undefined {
    if (this.ttlMs <= 0) return undefined;
    const key = keyOf(businessId, user, tokenHash);
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.account;
  }

  /** Keeps a successful authentication for ttlMs from now. */
  set(businessId: string, user: string, tokenHash: Buffer, account: ClinicAccount): void {
    if (this.ttlMs <= 0) return;
    if (this.entries.size >= MAX_ENTRIES) this.prune();
    this.entries.set(keyOf(businessId, user, tokenHash), { account, expiresAt: this.now() + this.ttlMs });
  }

  private prune(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
  }
}

// Header values cannot hold a NUL, so the parts cannot run into one another.
const keyOf = (businessId: string, user: string, tokenHash: Buffer) => `${businessId}\0${user}\0${tokenHash.toString('base64')}`;
