import { describe, expect, it } from 'vitest';
import { FailureLimit } from '../../src/ehr/failure-limit.js';

describe('FailureLimit', () => {
  it('refuses a key after maxFailures within the window, until the window that began with the first failure ends', () => {
    let now = 1_000;
    const limit = new FailureLimit(3, 60_000, () => now);
    for (let failure = 1; failure <= 3; failure += 1) {
      expect(limit.isRefused('a')).toBe(false);
      limit.recordFailure('a');
      now += 10_000;
    }
    expect(limit.isRefused('a')).toBe(true);
    expect(limit.isRefused('b')).toBe(false);
    now = 1_000 + 59_999;
    expect(limit.isRefused('a')).toBe(true);
    now = 1_000 + 60_000;
    expect(limit.isRefused('a')).toBe(false);
    limit.recordFailure('a');
    expect(limit.isRefused('a')).toBe(false);
  });

  it('keeps at most maxKeys keys, dropping expired ones first, then the oldest', () => {
    let now = 0;
    const limit = new FailureLimit(1, 1_000, () => now, 2);
    limit.recordFailure('old');
    now = 500;
    limit.recordFailure('young');
    now = 900;
    limit.recordFailure('newest');
    // No key had expired: the oldest went.
    expect([limit.isRefused('old'), limit.isRefused('young'), limit.isRefused('newest')]).toEqual([false, true, true]);
    // 'young' has expired by now: it goes, 'newest' stays.
    now = 1_600;
    limit.recordFailure('later');
    expect([limit.isRefused('young'), limit.isRefused('newest'), limit.isRefused('later')]).toEqual([false, true, true]);
  });
});
