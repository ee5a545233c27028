import type { CallbackErrorItem } from '../errors/codes.js';

/**
 * The national registry and the providing МИС archive behind one port, asynchronous as the federal
 * РЭМД is: a submission (a registration, a demand for a document's file) is taken at once, and its
 * outcome arrives later, as an event, through the OutcomeSink the worker role hands to `receive`:
 * days later for РЭМД, after REGISTRY_ANSWER_DELAY for the built-in registry. Refusals come back as
 * `ok: false` / `accepted: false` with classifier-305 errors; a thrown error means "unavailable, try
 * again later" (the request waits and is submitted again, under the same message id).
 */
export interface RegistryPort {
  /** Submits a registration under `messageId`; its outcome (`registration`) arrives through the sink. */
  submitRegistration(submission: RegistrationSubmission): Promise<Submission>;
  /** Demands the current version of a document under `messageId`; its outcome (`file`) arrives through the sink. */
  submitDemand(submission: DemandSubmission): Promise<Submission>;
  /** Whose the current version of emdrId is (following newer versions), or undefined when there is no such item. */
  currentVersionOwner(emdrId: string): Promise<DocumentOwner | undefined>;
  search(criteria: RegistrySearch): Promise<RegistryItem[]>;
  /** The record of the version registered as emdrId (not followed to newer versions), or undefined when there is no such item. */
  record(emdrId: string): Promise<RegistryRecord | undefined>;
  /**
   * Starts handing the registry's answers to `sink` and serving its requests for kept files (the
   * worker role; the other roles only submit and search). Stop it before the sink's pipeline stops.
   */
  receive(sink: OutcomeSink, files: KeptFiles): Promise<{ stop(): Promise<void> }>;
}

/** An error the registry reports: a classifier-305 code (one the gateway's catalog may not list) and its message. */
export interface RegistryErrorItem {
  code: CallbackErrorItem['code'];
  message: string;
}

/** The registry's immediate answer to a submission: taken (its outcome follows), or refused. */
export type Submission = { accepted: true } | { accepted: false; errors: RegistryErrorItem[] };

/** What the gateway submits for registration. */
export interface RegistrationSubmission {
  /**
   * The message id of the submission, the gateway request's queueMessageId: the same on every
   * attempt, so that the registry can tell a repeated message, and the outcome names it
   * (relatesToMessage). The files are the ones stored with that request in emdr_requests: the
   * registry pulls the document (getDocumentFile) or, the built-in one, copies it in the database.
   */
  messageId: string;
  localUid: string;
  kind: string;
  organization: string;
  /** 11 digits. */
  patientSnils: string;
  documentNumber?: string;
  creationDateTime: string;
  replaces?: string;
  /** The organization's detached signature (DER). */
  signature: Buffer;
  /** Its checksum, when the request gave one (signatureChecksum). */
  signatureChecksum?: string;
  personalSignatures: ReadonlyArray<PersonalSignatureOfRequest>;
}

/**
 * The signer block of a personal signature, the registry's names (since interface B 2.0.0 beyond
 * `snils` and `role`): position is a code of NSI 1.2.643.5.1.13.13.11.1002, speciality of
 * 1.2.643.5.1.13.13.11.1066, department an OID. Requests of 1.x stored only snils and role.
 */
export interface PersonalSigner {
  localId?: string;
  lastName?: string;
  firstName?: string;
  middleName?: string;
  snils: string;
  role?: string;
  position?: string;
  speciality?: string;
  department?: string;
}

/** A personal signature as the request gave it: the signer block, the base64 signature and its checksum. */
export interface PersonalSignatureOfRequest {
  signer: PersonalSigner;
  signature: string;
  checksum?: string;
}

export interface DemandSubmission {
  messageId: string;
  emdrId: string;
}

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

/** A registered document, as the registry's outcome reports it. */
export interface Registration {
  emdrId: string;
  registrationDateTime: string;
  /** Until when the registry keeps the record (a date); not every registry reports it. */
  storeTillDate?: string;
  registrationWarnings?: RegistryErrorItem[];
}

/**
 * The registry's answer to a submission, named by its message id. A file's bytes were stored with
 * the request (emdr_requests.document, .signature) by the port before it reports the outcome.
 */
export type RegistryOutcome =
  | { messageId: string; ok: true; registration: Registration }
  | { messageId: string; ok: true; file: DocumentFileFromArchive }
  | { messageId: string; ok: false; errors: RegistryErrorItem[] };

/** What became of an outcome: recorded now, known already (a repeated answer: nothing changes), or naming no request. */
export type OutcomeReceipt = 'recorded' | 'duplicate' | 'unknown';

/** Where the registry's answers go (pipeline/stages/outcome.ts): idempotent, so a repeated answer reaches the clinic once. */
export interface OutcomeSink {
  record(outcomes: readonly RegistryOutcome[]): Promise<OutcomeReceipt[]>;
  /**
   * Stores a delivered file with the request that demanded it, before its outcome is recorded;
   * false when no request of that message id waits for one (unknown, or answered already).
   */
  storeFile(messageId: string, content: Buffer, signature: Buffer): Promise<boolean>;
}

/** A file the gateway keeps for the registry to pull (getDocumentFile): the document a clinic registers. */
export interface KeptFile {
  queueMessageId: string;
  documentSize: number;
  signatureSize: number;
}

/** The files the gateway keeps until the registry has them (pipeline/stages/kept-files.ts). */
export interface KeptFiles {
  /** The document registered as localUid for organization, while the gateway keeps it. */
  find(localUid: string, organization: string): Promise<KeptFile | undefined>;
  /** The base64 of one file, in slices whose texts joined are the base64 of the whole file. */
  base64Slices(file: KeptFile, which: 'document' | 'signature'): AsyncIterable<Buffer>;
}

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

/** A registry item as GetRegistryItem reads it: with the patient (11 digits, when the registry names it) and storeTillDate. */
export type RegistryRecord = RegistryItem & { patientSnils?: string; storeTillDate?: string };

/** The registry cannot be reached (or failed on its side): the caller tries again later. */
export class RegistryUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RegistryUnavailableError';
  }
}
