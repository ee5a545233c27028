/**
 * A worker thread of the import's staging pool (staging-pool.ts): it loads the FHIR definitions
 * once, says `{ready: true}`, then stages each batch it is sent (`{entries, importedAt}`) and
 * answers `{batch}` (or `{error}`), in the order it was sent them. Node runs this file as it is, as
 * TypeScript with its types stripped under the tests (hence the `.ts` specifiers here and in what
 * it imports) and compiled in dist/.
 */
import { parentPort } from 'node:worker_threads';
import { loadDefinitions } from '../fhir/validate.ts';
import { stageEntries, type EntryToStage } from './stage-entries.ts';

export interface StagingRequest {
  entries: EntryToStage[];
  importedAt: string;
}

export type StagingAnswer = { ready: true } | { batch: ReturnType<typeof stageEntries> } | { error: string };

const port = parentPort!;
await loadDefinitions();
port.on('message', ({ entries, importedAt }: StagingRequest) => {
  let answer: StagingAnswer;
  try {
    answer = { batch: stageEntries(entries, importedAt) };
  } catch (error) {
    answer = { error: error instanceof Error ? error.message : String(error) };
  }
  port.postMessage(answer);
});
port.postMessage({ ready: true } satisfies StagingAnswer);
