import { demandContent } from './demand-content.js';
import type { Operation } from '../lifecycle/lifecycle.js';
import type { OperationHandler } from './operation-handler.js';
import { registerDocument } from './register-document.js';

/** Each operation's handler (operation-handler.ts): adding an operation is an entry here and in lifecycle.ts. */
export const OPERATION_HANDLERS: Record<Operation, OperationHandler> = {
  RegisterDocument: registerDocument,
  DemandContent: demandContent,
};
