import { describe, expect, it } from 'vitest';
import { ClientShares } from '../../src/limits/client-shares.js';

/** ClientShares with a clock the test moves. */
function shares(perClient: number, activeForMs = 1000) {
  const clock = { now: 0 };
  return { clock, shares: new ClientShares({ perClient, activeForMs, now: () => clock.now }) };
}

const admitted = (entered: (() => void) | Promise<() => void>) => typeof entered === 'function';

describe('ClientShares', () => {
  it('never holds a client alone', () => {
    const { shares: gate } = shares(1);
    const entries = Array.from({ length: 5 }, () => gate.enter('a'));
    expect(entries.every(admitted)).toBe(true);
  });

  it('holds a client past its share while another is active, and lets the waiting go on in order as its own requests end', async () => {
    const { shares: gate } = shares(1);
    const first = gate.enter('a') as () => void;
    const other = gate.enter('b') as () => void;
    const order: string[] = [];
    const second = gate.enter('a');
    const third = gate.enter('a');
    expect(admitted(second) || admitted(third)).toBe(false);
    expect(gate.waiting).toBe(2);
    void (second as Promise<() => void>).then(() => order.push('second'));
    void (third as Promise<() => void>).then(() => order.push('third'));
    // Another client's request ending does not let them pass while that client is still active.
    other();
    await Promise.resolve();
    expect(order).toEqual([]);
    first();
    const release = await second;
    expect(order).toEqual(['second']);
    expect(gate.waiting).toBe(1);
    release();
    await third;
    expect(order).toEqual(['second', 'third']);
  });

  it('counts another client as active for activeForMs after its last request, then the share lifts', async () => {
    const { clock, shares: gate } = shares(1, 1000);
    (gate.enter('b') as () => void)();
    const first = gate.enter('a') as () => void;
    clock.now = 999;
    const second = gate.enter('a');
    expect(admitted(second)).toBe(false);
    first();
    await second;
    // 'b' was last seen 1001 ms ago: 'a' is alone, and its next request goes on beside the one in progress.
    clock.now = 1001;
    expect(admitted(gate.enter('a'))).toBe(true);
  });
});
