import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.js';
import { FairStage, type FairStageOptions } from '../../src/work/fair-stage.js';
import { until } from '../support/until.js';

/**
 * FairStage (the acceptance checks' and the deliveries' scheduler) over an in-memory queue that
 * stands for the table: the claim takes what the stage offers, and the test decides when a claim
 * answers and when an item's work ends, to reproduce an ordering that the pipeline met under load.
 */

const PER_KEY = 2;
/** Longer than the test may wait: work found only by the idle poll counts as stuck. */
const IDLE_POLL_MS = 60_000;

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}
function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

/**
 * A stage, started and past its first (empty) claim, whose items are each worked on until the test
 * resolves them (`work`), then settled into `settled`.
 */
async function workingStage(
  options: Pick<FairStageOptions<number, number>, 'keyOf' | 'claim' | 'capacity' | 'perKey' | 'claimSpacingMs'> & {
    /** Called as a settle begins; the settle ends when what it returns does. */
    settling?: (results: number[]) => Promise<void>;
  },
) {
  const work = new Map<number, Deferred>();
  const settled: number[] = [];
  let claims = 0;
  const stage = new FairStage<number, number>({
    name: 'test',
    ...options,
    claim(...args) {
      claims += 1;
      return options.claim(...args);
    },
    async process(item) {
      const done = deferred();
      work.set(item, done);
      await done.promise;
      return item;
    },
    async settle(results) {
      await options.settling?.(results);
      settled.push(...results);
    },
    extend: async () => undefined,
    leaseMs: 30_000,
    settleGroup: 32,
    idlePollMs: IDLE_POLL_MS,
    logger: createLogger('silent'),
  });
  stage.start();
  await until(
    'the first, empty claim',
    async () => claims,
    (count) => count >= 1,
  );
  return { stage, work, settled };
}

/** A working stage of clinics a (items below 100) and b (the others), 8 places and 4 a clinic, claiming what `waiting` holds. */
function twoClinicStage(waiting: number[], options: Pick<Parameters<typeof workingStage>[0], 'claimSpacingMs' | 'settling'> = {}) {
  return workingStage({
    keyOf: (item) => (item < 100 ? 'a' : 'b'),
    async claim(limit) {
      return waiting.splice(0, limit);
    },
    capacity: 8,
    perKey: 4,
    ...options,
  });
}

describe('FairStage', () => {
  let stage: FairStage<number, number> | undefined;
  afterEach(async () => {
    await stage?.stop(1000);
    stage = undefined;
  });

  it('claims again after a claim that took all the room it offered, though places freed while it ran left the key below its cap', async () => {
    const waiting: number[] = [];
    const offers: number[] = [];
    let holdClaim: Deferred | undefined;
    const started = await workingStage({
      keyOf: () => 'clinic',
      async claim(limit, room, perKey, full) {
        const offered = full.includes('clinic') ? 0 : Math.min(limit, room.get('clinic') ?? perKey);
        offers.push(offered);
        // Taken when the claim's statement runs (now); answered when the test lets it.
        const taken = waiting.splice(0, offered);
        if (holdClaim) await holdClaim.promise;
        return taken;
      },
      capacity: 2 * PER_KEY,
      perKey: PER_KEY,
    });
    stage = started.stage;
    const { work, settled } = started;

    // One item: claimed alone (the key below its cap, so not marked full).
    waiting.push(1);
    stage.wake();
    await until('item 1 in hand', async () => work.has(1), Boolean);

    // Nine more, announced; the claim offers the one place left and is held while item 1 ends.
    waiting.push(2, 3, 4, 5, 6, 7, 8, 9, 10);
    holdClaim = deferred();
    const claimsBefore = offers.length;
    stage.wake();
    await until(
      'the claim offering the place left',
      async () => offers.length,
      (count) => count > claimsBefore,
    );
    expect(offers.at(-1)).toBe(1);
    work.get(1)!.resolve();
    await until('item 1 settled', async () => settled.includes(1), Boolean);
    const claim = holdClaim;
    holdClaim = undefined;
    claim.resolve();

    // From here nothing announces work: the stage must find the eight left through its own places freeing.
    for (let item = 2; item <= 10; item += 1) {
      await until(`item ${item} in hand (claims offered ${offers.join(', ')})`, async () => work.has(item), Boolean, 10_000);
      work.get(item)!.resolve();
    }
    await until(
      'all ten settled',
      async () => settled.length,
      (count) => count === 10,
      10_000,
    );
    expect(waiting).toEqual([]);
  });

  it("takes hand-offs within a key's cap and its capacity, counts reserved places against claims, and works on what it is handed", async () => {
    const offers: Array<{ limit: number; room: Map<string, number>; full: string[] }> = [];
    const started = await workingStage({
      // Items below 100 are clinic a's, the others clinic b's.
      keyOf: (item) => (item < 100 ? 'a' : 'b'),
      async claim(limit, room, _perKey, full) {
        offers.push({ limit, room: new Map(room), full: [...full] });
        return [];
      },
      capacity: 2 * PER_KEY + 1,
      perKey: PER_KEY,
    });
    stage = started.stage;
    const { work, settled } = started;

    // Clinic a wants 3 places and has a cap of 2; b wants 5 and gets what capacity leaves (5 - 2 = 3, capped at 2).
    const reserved = stage.reserveHandOff(
      new Map([
        ['a', 3],
        ['b', 5],
      ]),
    );
    expect(reserved).toEqual(
      new Map([
        ['a', 2],
        ['b', 2],
      ]),
    );
    // While reserved, a claim sees the keys at their cap and one place left.
    stage.wake();
    await until(
      'a claim during the reservation',
      async () => offers.length,
      (count) => count >= 2,
    );
    expect(offers.at(-1)).toMatchObject({ limit: 1, full: ['a', 'b'] });
    expect(stage.reserveHandOff(new Map([['a', 1]]))).toEqual(new Map());

    // The settle leased only one of a's and one of b's: both worked on, the unused places given back.
    stage.handOff(reserved, [1, 101]);
    await until('both handed items in hand', async () => work.has(1) && work.has(101), Boolean);
    expect(stage.held('a')).toBe(1);
    expect(stage.held('b')).toBe(1);
    work.get(1)!.resolve();
    work.get(101)!.resolve();
    await until(
      'both settled',
      async () => settled.length,
      (count) => count === 2,
    );
    expect(settled.sort((x, y) => x - y)).toEqual([1, 101]);
    expect(stage.held('a')).toBe(0);
  });

  it('claims work announced while hand-offs filled its places once they free, not at its idle poll', async () => {
    const waiting: number[] = [];
    const started = await workingStage({
      keyOf: () => 'origin',
      async claim(limit) {
        return waiting.splice(0, limit);
      },
      capacity: 4,
      perKey: 4,
    });
    stage = started.stage;
    const { work } = started;
    const reserved = stage.reserveHandOff(new Map([['origin', 4]]));
    stage.handOff(reserved, [1, 2, 3, 4]);
    await until(
      'the handed items in hand',
      async () => work.size,
      (size) => size === 4,
    );
    // Work announced while every place is taken: nothing to claim it with yet.
    waiting.push(5, 6);
    stage.wake();
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (const item of [1, 2, 3, 4]) work.get(item)!.resolve();
    await until('the announced work claimed once places freed', async () => work.has(5) && work.has(6), Boolean, 10_000);
    expect(waiting).toEqual([]);
  });

  it("settles the result of a key with nothing else in hand at once, beside a settle under way, and gathers a busy key's", async () => {
    const waiting: number[] = [];
    const settles: number[][] = [];
    const held = new Map<number, Deferred>();
    // Clinic a has a backlog, clinic b one document.
    const started = await twoClinicStage(waiting, {
      async settling(results) {
        settles.push(results);
        // A settle of a's first item is held until the test lets it end.
        if (results.includes(1)) {
          const hold = deferred();
          held.set(1, hold);
          await hold.promise;
        }
      },
    });
    stage = started.stage;
    const { work, settled } = started;
    waiting.push(1, 2, 3, 101);
    stage.wake();
    await until('all four in hand', async () => [1, 2, 3, 101].every((item) => work.has(item)), Boolean);

    // a's first result: others of a are in hand, so it waits a moment for them, then settles (held).
    work.get(1)!.resolve();
    await until('the settle of item 1 under way', async () => held.has(1), Boolean);
    // b's result, while that settle is held: settled in a statement of its own, not after it.
    work.get(101)!.resolve();
    await until('b settled beside the held settle', async () => settled.includes(101), Boolean, 10_000);
    expect(settles.at(-1)).toEqual([101]);
    expect(settled).not.toContain(1);
    // a's next results, still a backlog's, wait for the held settle and go together after it.
    work.get(2)!.resolve();
    work.get(3)!.resolve();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(settled).toEqual([101]);
    held.get(1)!.resolve();
    await until(
      'all settled',
      async () => settled.length,
      (count) => count === 4,
    );
    expect(settles).toEqual([[1], [101], [2, 3]]);
  });

  it('claims at once for a key with nothing in hand, while a busy key spaces the claims', async () => {
    const waiting: number[] = [];
    const started = await twoClinicStage(waiting, {
      // Longer than the test may wait: a claim that waits for the spacing counts as never made.
      claimSpacingMs: 60_000,
    });
    stage = started.stage;
    const { work } = started;
    waiting.push(1);
    stage.wake('a');
    await until('item 1 in hand', async () => work.has(1), Boolean);
    // More of a's, announced: a has an item in hand, so the claim waits for the spacing.
    waiting.push(2);
    stage.wake('a');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(work.has(2)).toBe(false);
    // b's, announced by its key: claimed now (with what else waits).
    waiting.push(101);
    stage.wake('b');
    await until('b claimed without waiting for the spacing', async () => work.has(101), Boolean, 10_000);
  });

  it('hands items to a key with little in hand while another key fills a quarter of the places, not to that key', async () => {
    const waiting: number[] = [];
    const started = await twoClinicStage(waiting);
    stage = started.stage;
    const { work } = started;
    // a holds 3 of the 8 places (at least a quarter: busy).
    waiting.push(1, 2, 3);
    stage.wake();
    await until(
      'a holds three places',
      async () => stage!.held('a'),
      (count) => count === 3,
    );
    const reserved = stage.reserveHandOff(
      new Map([
        ['a', 1],
        ['b', 1],
      ]),
    );
    expect(reserved).toEqual(new Map([['b', 1]]));
    stage.handOff(reserved, [101]);
    await until('the handed item in hand', async () => work.has(101), Boolean);
    // a's item, refused, waits for a claim: a later hand-off must not pass it, though a has room now.
    work.get(1)!.resolve();
    await until(
      'a down to two',
      async () => stage!.held('a'),
      (count) => count === 2,
    );
    expect(stage.reserveHandOff(new Map([['a', 1]]))).toEqual(new Map());
  });
});
