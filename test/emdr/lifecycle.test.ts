import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import {
  CALLBACK_STATES,
  CALLBACKS,
  callbackOf,
  ENDED_STATES,
  OPERATIONS,
  REQUEST_STATES,
  sourceStates,
  STAGES,
  stagesWoken,
  TRANSITIONS,
  type Operation,
} from '../../src/emdr/pipeline/lifecycle/lifecycle.js';
import { OPERATION_HANDLERS } from '../../src/emdr/pipeline/operations/operations.js';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.js';
import { addClinic, authHeaders, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';
import { until } from '../support/until.js';

/** The lifecycle's tables (src/emdr/pipeline/lifecycle/lifecycle.ts): consistent in themselves, with the spec clinics read, and as the pipeline runs them. */

const spec = YAML.parse(fs.readFileSync(path.join(import.meta.dirname, '../../specs/openapi.yaml'), 'utf8'));
const schemas = spec.components.schemas;
const listParameters: Array<{ name: string; schema: { enum: string[] } }> = spec.paths['/api/messages'].get.parameters;
const sorted = (values: readonly string[]) => [...values].sort();

describe('the lifecycle tables', () => {
  it('name the states, operations and callbacks the spec lists, no more and no fewer', () => {
    expect(sorted(schemas.MessageState.properties.state['x-extensible-enum'])).toEqual(sorted(REQUEST_STATES));
    expect(sorted(listParameters.find((parameter) => parameter.name === 'state')!.schema.enum)).toEqual(sorted(REQUEST_STATES));
    expect(sorted(schemas.CallbackState.properties.state['x-extensible-enum'])).toEqual(sorted(CALLBACK_STATES));
    expect(sorted(listParameters.find((parameter) => parameter.name === 'callbackState')!.schema.enum)).toEqual(sorted(CALLBACK_STATES));
    expect(sorted(schemas.MessageState.properties.operation['x-extensible-enum'])).toEqual(sorted(OPERATIONS));
    expect(sorted(schemas.CallbackName['x-extensible-enum'])).toEqual(
      sorted(OPERATIONS.flatMap((operation) => CALLBACKS[operation].map((callback) => callback.name))),
    );
    // Each callback is one of its operation's in the spec, and has a body schema of its name.
    for (const operation of OPERATIONS) {
      const documented = Object.keys(spec.paths[`/api/${operation}`].post.callbacks);
      for (const callback of CALLBACKS[operation]) {
        expect(documented).toContain(callback.name);
        expect(schemas[callback.name]).toBeDefined();
      }
    }
  });

  it('end a request only in an ended state, from which nothing moves it on', () => {
    const moving = new Set<string>(TRANSITIONS.map((transition) => transition.from));
    for (const state of REQUEST_STATES) expect(moving.has(state)).toBe(!(ENDED_STATES as readonly string[]).includes(state));
    for (const transition of TRANSITIONS) expect(REQUEST_STATES).toContain(transition.to);
    // Every state but `received` (the intake's) is reached by a transition.
    const reached = new Set<string>(TRANSITIONS.map((transition) => transition.to));
    expect(REQUEST_STATES.filter((state) => !reached.has(state))).toEqual(['received']);
  });

  it('give each stage the state its transitions start from, and wake the stages whose work they make', () => {
    for (const stage of ['acceptance', 'submission', 'deadline'] as const) expect(sourceStates(stage)).toEqual([STAGES[stage].claims]);
    expect(STAGES.delivery.claims).toBe('callbacks');
    expect(stagesWoken('acceptance')).toEqual(['submission', 'delivery']);
    // Submitted requests come due at their deadline (the submission stage wakes the deadline stage then), not at once.
    expect(stagesWoken('submission')).toEqual(['delivery']);
    expect(stagesWoken('outcome')).toEqual(['delivery']);
  });

  it('emit each callback exactly once per request, the acceptance one first, by the position of CALLBACKS', () => {
    for (const operation of OPERATIONS) {
      const phases = CALLBACKS[operation].map((callback) => callback.phase);
      expect(new Set(phases).size).toBe(phases.length);
      CALLBACKS[operation].forEach((callback, index) => {
        expect(callbackOf(operation, callback.phase)).toMatchObject({ name: callback.name, sequence: index + 1 });
      });
      expect(callbackOf(operation, 'acceptance').sequence).toBe(1);
    }
    // A path from received to an ended state emits each phase at most once.
    const emitted = (from: string, seen: string[]): string[][] =>
      ENDED_STATES.includes(from as never)
        ? [seen]
        : TRANSITIONS.filter((transition) => transition.from === from).flatMap((transition) =>
            emitted(transition.to, 'emits' in transition ? [...seen, transition.emits] : seen),
          );
    for (const path of emitted('received', [])) {
      expect(new Set(path).size).toBe(path.length);
      expect(path[0]).toBe('acceptance');
    }
  });

  it('has a handler for every operation, expecting the outcome its result reads', () => {
    expect(Object.keys(OPERATION_HANDLERS).sort()).toEqual([...OPERATIONS].sort());
    const expected: Record<Operation, string> = { RegisterDocument: 'registration', DemandContent: 'file' };
    for (const operation of OPERATIONS) expect(OPERATION_HANDLERS[operation].expects).toBe(expected[operation]);
  });
});

describe('the built-in registry, answering later (REGISTRY_ANSWER_DELAY)', () => {
  let service: TestService;
  let receiver: CallbackReceiver;

  beforeAll(async () => {
    receiver = await startCallbackReceiver();
    service = await startTestService({ REGISTRY_ANSWER_DELAY: '1500ms', CALLBACK_RETRY_SCHEDULE: '0,200ms' });
  });

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  it('shows the request submitted, its acceptance callback delivered and its result not yet, until the answer comes', async () => {
    const clinic = await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
    const { body: ack } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
    const state = () => fetch(`${service.publicUrl}/api/messages/${ack.queueMessageId}`, { headers: authHeaders(clinic) }).then((response) => response.json());
    const waiting = await until('submitted', state, (current) => current.state === 'submitted' && current.callbacks[0]?.state === 'delivered');
    expect(waiting.callbacks.map((callback: { name: string }) => callback.name)).toEqual(['SendRegisterDocumentResponse']);
    const listed = await fetch(`${service.publicUrl}/api/messages?state=submitted`, { headers: authHeaders(clinic) }).then((response) => response.json());
    expect(listed.items.map((item: { queueMessageId: string }) => item.queueMessageId)).toContain(ack.queueMessageId);
    const done = await until('completed', state, (current) => current.state === 'completed' && current.callbacks[1]?.state === 'delivered');
    expect(done.emdrId).toEqual(expect.any(String));
    expect(receiver.schemaViolations).toEqual([]);
  });
});
