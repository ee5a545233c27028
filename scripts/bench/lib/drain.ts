/** Runs `work` for indexes 0 … count - 1, `concurrency` at once: each of them takes the next index until none is left. */
export async function drain(count: number, concurrency: number, work: (index: number) => unknown): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const index = next;
      next += 1;
      await work(index);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}
