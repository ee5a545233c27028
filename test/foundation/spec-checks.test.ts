import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/cli.js';

const run = promisify(execFile);

/**
 * The spec checks of `make test` (scripts/validate-specs.ts, Redocly lint, scripts/check-generated.sh)
 * run on a copy of the repository whose specs we break.
 */
describe('spec checks of make test', () => {
  let copy: string;

  beforeEach(async () => {
    copy = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-specs-'));
    for (const entry of ['specs', 'generated', 'scripts', 'src', 'redocly.yaml', 'package.json']) {
      await fs.cp(path.join(repoRoot, entry), path.join(copy, entry), { recursive: true });
    }
    await fs.symlink(path.join(repoRoot, 'node_modules'), path.join(copy, 'node_modules'));
  });

  afterEach(async () => {
    await fs.rm(copy, { recursive: true, force: true });
  });

  async function check(command: string, args: string[]): Promise<{ code: number; output: string }> {
    try {
      const { stdout, stderr } = await run(command, args, {
        cwd: copy,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      });
      return { code: 0, output: stdout + stderr };
    } catch (error) {
      const failure = error as { code: number; stdout: string; stderr: string };
      return { code: failure.code, output: failure.stdout + failure.stderr };
    }
  }
  const validateSpecs = () => check(process.execPath, ['--import', 'tsx', 'scripts/validate-specs.ts']);
  const lintOpenApi = () => check(path.join(repoRoot, 'node_modules/.bin/redocly'), ['lint', '--format=stylish', 'specs/openapi.yaml']);
  const checkGenerated = () => check('bash', ['scripts/check-generated.sh']);
  const checkBreaking = () => check(process.execPath, ['--import', 'tsx', 'scripts/check-breaking.ts', '--oasdiff', path.join(repoRoot, '.tools/oasdiff')]);
  async function editOpenRpc(edit: (document: any) => void): Promise<void> {
    const file = path.join(copy, 'specs/openrpc.json');
    const document = JSON.parse(await fs.readFile(file, 'utf8'));
    edit(document);
    await fs.writeFile(file, JSON.stringify(document));
  }
  async function editOpenApi(edit: (text: string) => string): Promise<void> {
    const file = path.join(copy, 'specs/openapi.yaml');
    await fs.writeFile(file, edit(await fs.readFile(file, 'utf8')));
  }

  /** The copy's current specs become its released ones: a probe then judges its one change alone, whether or not the working specs are released yet. */
  async function releaseCurrentSpecs(): Promise<void> {
    for (const name of ['openrpc.json', 'openapi.yaml']) await fs.copyFile(path.join(copy, 'specs', name), path.join(copy, 'specs/released', name));
  }

  const bumpOpenApi = () => editOpenApi((text) => text.replace(/^ {2}version: .*$/m, '  version: 99.0.0-alpha'));
  /** The breaking-change check refuses, naming every one of `problems`, and passes once `bump` changed info.version. */
  async function expectRefusedUntilBumped(problems: Array<string | RegExp>, bump: () => Promise<void>): Promise<void> {
    const refused = await checkBreaking();
    expect(refused.code).toBe(1);
    for (const problem of problems) expect(refused.output).toMatch(problem);
    expect(refused.output).toContain('bump it');
    await bump();
    const bumped = await checkBreaking();
    expect(bumped.output).toContain('allowed: version bumped to 99.0.0-alpha');
    expect(bumped.code).toBe(0);
  }

  it('pass on the committed specs and generated/', async () => {
    expect((await validateSpecs()).code).toBe(0);
    expect((await lintOpenApi()).code).toBe(0);
    const generated = await checkGenerated();
    expect(generated.output).toContain('up to date');
    expect(generated.code).toBe(0);
  });

  it('pass the breaking-change check on the committed specs', async () => {
    const result = await checkBreaking();
    expect(result.output).toContain('specs/openrpc.json: compatible with released');
    expect(result.output).toContain('specs/openapi.yaml: compatible with released');
    expect(result.code).toBe(0);
  });

  it('fail on an incompatible change of interface A without a version bump, and pass once it is bumped', async () => {
    await releaseCurrentSpecs();
    await editOpenRpc((document) => {
      document.methods = document.methods.filter((method: { name: string }) => method.name !== 'embedded_storage.remove_auth_info');
      document.components.schemas.PatientProperties.required.push('middleName');
      document.components.schemas.Gender.enum.push(5);
      document.methods.find((method: { name: string }) => method.name === 'patient.get_patient').errors.push({ $ref: '#/components/errors/SaveAuthInfoError' });
    });
    await expectRefusedUntilBumped(
      [
        'embedded_storage.remove_auth_info: method removed',
        'embedded_storage.authenticate(patientProperties).middleName: became required',
        'patient.get_patient result.patient.gender: may now be 5',
        'patient.get_patient: may now answer error -34003',
      ],
      () =>
        editOpenRpc((document) => {
          document.info.version = '99.0.0-alpha';
        }),
    );
  });

  it('fail on an incompatible change of interface B without a version bump, and pass once it is bumped', async () => {
    await releaseCurrentSpecs();
    await editOpenApi((text) =>
      text.replace(
        'required: [localUid, kind, organization, patientSnils, creationDateTime, document, signature]',
        'required: [localUid, kind, organization, patientSnils, creationDateTime, document, signature, documentNumber]',
      ),
    );
    await expectRefusedUntilBumped([/request property `documentNumber` became required/], bumpOpenApi);
  });

  /** The copy's specs/released/openapi.yaml becomes its current spec, edited: probes then compare one change against it. */
  async function releaseOpenApi(edit: (text: string) => string = (text) => text): Promise<void> {
    const current = await fs.readFile(path.join(copy, 'specs/openapi.yaml'), 'utf8');
    await fs.writeFile(path.join(copy, 'specs/released/openapi.yaml'), edit(current));
  }
  /** text with `pattern` replaced; throws when it is not there, so that a probe cannot miss silently. */
  function edited(text: string, pattern: string | RegExp, replacement: string): string {
    const result = text.replace(pattern, replacement);
    if (result === text) throw new Error(`probe: ${String(pattern)} not found in the spec`);
    return result;
  }
  const addMember = (schema: string, member: string) => (text: string) =>
    edited(text, new RegExp(`(\\n    ${schema}:\\n(?:      .*\\n|        .*\\n)*?      properties:\\n)`), `$1        ${member}: { type: string }\n`);

  it('treat a new member of an answer or of a callback body, and a new value of an x-extensible-enum, as compatible', async () => {
    await releaseOpenApi();
    await editOpenApi((text) =>
      [
        addMember('RegisterDocumentAcknowledgement', 'probe'),
        addMember('SendRegisterDocumentResultResponse', 'probe'),
        (spec: string) =>
          edited(
            spec,
            'x-extensible-enum: [received, rejected, accepted, submitted, completed, failed]',
            'x-extensible-enum: [received, rejected, accepted, submitted, completed, failed, archived]',
          ),
        (spec: string) => edited(spec, 'x-extensible-enum: [success, error]', 'x-extensible-enum: [success, error, partial]'),
      ].reduce((spec, edit) => edit(spec), text),
    );
    const result = await checkBreaking();
    expect(result.output).toContain('specs/openapi.yaml: compatible with released');
    expect(result.code).toBe(0);
  });

  it('fail when an answer or a callback body widens beyond what the released spec closed, or a callback loses a member or a header', async () => {
    await releaseOpenApi((text) =>
      [
        (spec: string) =>
          edited(
            spec,
            /(\n {4}RegisterDocumentAcknowledgement:\n {6}title: RegisterDocumentAcknowledgement\n {6}type: object\n {6}additionalProperties: )true/,
            '$1false',
          ),
        (spec: string) => edited(spec, 'x-extensible-enum: [success, error]', 'enum: [success, error]'),
        (spec: string) =>
          edited(
            spec,
            'x-extensible-enum: [received, rejected, accepted, submitted, completed, failed]',
            'enum: [received, rejected, accepted, submitted, completed, failed]',
          ),
      ].reduce((spec, edit) => edit(spec), text),
    );
    await editOpenApi((text) =>
      [
        addMember('RegisterDocumentAcknowledgement', 'probe'),
        (spec: string) => edited(spec, 'x-extensible-enum: [success, error]', 'enum: [success, error, partial]'),
        (spec: string) => edited(spec, /(\n {4}SendRegisterDocumentResultResponse:\n(?: {6}.*\n| {8}.*\n)*?) {8}emdrId: .*\n/, '$1'),
        (spec: string) =>
          edited(spec, /(operationId: SendDemandContentResponse\n(?:.*\n)*?) {16}- \$ref: '#\/components\/parameters\/WebhookSignature'\n/, '$1'),
      ].reduce((spec, edit) => edit(spec), text),
    );
    await expectRefusedUntilBumped(
      [
        'RegisterDocumentAcknowledgement.probe: added to an object the released spec closes (additionalProperties: false)',
        'MessageState.state: the released spec closes its values (enum); now they are open',
        'callback SendRegisterDocumentResponse body.status: may now be "partial"',
        'callback SendRegisterDocumentResultResponse body.emdrId: removed',
        'callback SendDemandContentResponse: header webhook-signature no longer sent',
      ],
      bumpOpenApi,
    );
  });

  it('fail when a schema changed in a spec without make generate', async () => {
    const file = path.join(copy, 'specs/openapi.yaml');
    const spec = await fs.readFile(file, 'utf8');
    await fs.writeFile(
      file,
      spec.replace(
        /\ncomponents:\n {2}schemas:\n/,
        '\ncomponents:\n  schemas:\n    DriftProbe:\n      title: DriftProbe\n      type: object\n      properties:\n        probe: { type: string }\n',
      ),
    );
    const result = await checkGenerated();
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('generated/ is out of date');
    expect(result.output).toContain('DriftProbe');
  });

  it('fail on a malformed OpenRPC document with the validator message', async () => {
    const file = path.join(copy, 'specs/openrpc.json');
    const spec = JSON.parse(await fs.readFile(file, 'utf8'));
    delete spec.info.version;
    await fs.writeFile(file, JSON.stringify(spec));
    const result = await validateSpecs();
    expect(result.code).not.toBe(0);
    expect(result.output).toMatch(/specs\/openrpc\.json: .*version/s);
  });

  it('fail on a malformed OpenAPI document with the linter message', async () => {
    const file = path.join(copy, 'specs/openapi.yaml');
    await fs.writeFile(file, (await fs.readFile(file, 'utf8')).replace('openapi: 3.1.0', 'openapi: 3.1.0\nwebhooks: 42'));
    const result = await lintOpenApi();
    expect(result.code).not.toBe(0);
    expect(result.output).toMatch(/WebhooksMap/);
  });

  it('fail on a component schema without a title', async () => {
    const file = path.join(copy, 'specs/openapi.yaml');
    await fs.writeFile(file, (await fs.readFile(file, 'utf8')).replace('      title: HealthStatus\n', ''));
    const result = await validateSpecs();
    expect(result.code).not.toBe(0);
    expect(result.output).toContain('schema HealthStatus has no title');
  });
});
