import type { CallbackErrorItem } from '../codes.js';

/** What the gateway submits for registration. */
export interface RegistrationInput {
  /**
   * The gateway request behind it (its queueMessageId): registering twice for one request gives the
   * first result. The files registered are the ones stored with that request in emdr_requests, so
   * that a large document is copied by the database rather than through this process.
   */
  requestKey: string;
  localUid: string;
  kind: string;
  organization: string;
  /** 11 digits. */
  patientSnils: string;
  documentNumber?: string;
  creationDateTime: string;
  replaces?: string;
}

export type RegistrationOutcome =
  | { ok: true; emdrId: string; registrationDateTime: string; version: number }
  | { ok: false; errors: CallbackErrorItem[] };

/** Whose a registered document is: what the gateway's access rule (access.ts) looks at. */
export interface DocumentOwner {
  organization: string;
  /** 11 digits. */
  patientSnils: string;
}

/** The current version of a document, as the providing МИС archive holds it. */
export interface DocumentFileFromArchive extends DocumentOwner {
  emdrId: string;
  localUid: string;
  kind: string;
  version: number;
  fileName: string;
}

export type FetchOutcome = { ok: true; file: DocumentFileFromArchive } | { ok: false; errors: CallbackErrorItem[] };

export interface RegistrySearch {
  patientSnils?: string;
  kind?: string;
  organization?: string;
  localUid?: string;
  registerDateBegin?: string;
  registerDateEnd?: string;
  /** Only these organizations (a clinic account's list); undefined = any. */
  organizations?: readonly string[];
  limit: number;
}

/** A type alias, not an interface: SearchRegistryItem's answer schema is open, and only aliases fit its index signature. */
export type RegistryItem = {
  emdrId: string;
  localUid: string;
  kind: string;
  organization: string;
  registrationDateTime: string;
  version: number;
};

/**
 * The national registry and the providing МИС archive behind one port. Refusals come back as
 * `ok: false` with classifier-305 errors; a thrown error means "unavailable, try again later"
 * (the pg-boss job is retried).
 */
export interface RegistryPort {
  register(input: RegistrationInput): Promise<RegistrationOutcome>;
  /** Whose the current version of emdrId is (following newer versions), or undefined when there is no such item. */
  currentVersionOwner(emdrId: string): Promise<DocumentOwner | undefined>;
  /**
   * The current version of the document registered as emdrId (following newer versions); its files
   * are stored with the gateway request `requestKey` (emdr_requests.document and .signature).
   */
  fetchCurrentVersion(emdrId: string, requestKey: string): Promise<FetchOutcome>;
  search(criteria: RegistrySearch): Promise<RegistryItem[]>;
}
