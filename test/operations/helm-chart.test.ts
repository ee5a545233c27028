import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CONFIG_VARIABLES } from '../../src/config/config.js';
import { ROLES } from '../../src/roles.js';
import { repoRoot } from '../support/cli.js';

const run = promisify(execFile);

/**
 * deploy/helm/ehr-gateway as helm renders it (make check-deploy lints it and validates it against
 * the Kubernetes schemas): what the chart must do for the service, checked on its output.
 */
const HELM = path.join(repoRoot, '.tools/helm');

type Manifest = { kind: string; metadata: { name: string; annotations?: Record<string, string> }; spec: any };
type Container = {
  name: string;
  image: string;
  args: string[];
  env: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string; optional?: boolean } } }>;
  ports?: Array<{ name: string; containerPort: number }>;
  [probe: string]: any;
};

async function render(...sets: string[]): Promise<Manifest[]> {
  const { stdout } = await run(HELM, ['template', 'gw', 'deploy/helm/ehr-gateway', '--kube-version', '1.33.0', ...sets.flatMap((set) => ['--set', set])], {
    cwd: repoRoot,
  });
  return parseAllDocuments(stdout)
    .map((document) => document.toJS() as Manifest)
    .filter(Boolean);
}

let manifests: Manifest[];
const named = (kind: string, name: string) => manifests.find((manifest) => manifest.kind === kind && manifest.metadata.name === name);
const containerOf = (manifest: Manifest) => manifest.spec.template.spec.containers[0] as Container;

beforeAll(async () => {
  expect(fs.existsSync(HELM), `${HELM} is missing: run make deploy-tools`).toBe(true);
  manifests = await render();
});

describe('the Helm chart', () => {
  it('runs each role as its own Deployment with probes on /healthz and /readyz, resources and a locked-down container', () => {
    for (const role of ROLES) {
      const deployment = named('Deployment', `gw-ehr-gateway-${role}`)!;
      expect(deployment, role).toBeDefined();
      const container = containerOf(deployment);
      expect(container.args).toEqual(['serve', '--only', role]);
      expect(container.livenessProbe.httpGet.path).toBe('/healthz');
      expect(container.startupProbe.httpGet.path).toBe('/healthz');
      // Liveness and startup ask the liveness listener (HEALTH_PORT), which answers beside a busy event loop.
      expect(container.livenessProbe.httpGet.port).toBe('health');
      expect(container.startupProbe.httpGet.port).toBe('health');
      expect(container.ports!.map((port) => port.name)).toContain('health');
      expect(container.readinessProbe.httpGet.path).toBe('/readyz');
      const probePort = container.readinessProbe.httpGet.port as string;
      expect(container.ports!.map((port) => port.name)).toContain(probePort);
      expect(container.resources.requests).toEqual({ cpu: expect.any(String), memory: expect.stringMatching(/Mi$/) });
      expect(container.resources.limits.memory).toMatch(/Mi$/);
      expect(container.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
      expect(deployment.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
      // The worker role has no public listener.
      expect(container.ports!.some((port) => port.name === 'http')).toBe(role !== 'worker');
    }
  });

  it('holds a role at its own image tag for a staged upgrade: migrations and workers first, the API roles after', async () => {
    const staged = await render('image.tag=2.0.0', 'roles.ehr.imageTag=1.9.0', 'roles.emdr.imageTag=1.9.0');
    const imageOf = (kind: string, name: string) =>
      containerOf(staged.find((manifest) => manifest.kind === kind && manifest.metadata.name === name)!).image as string;
    expect(imageOf('Job', 'gw-ehr-gateway-migrate')).toBe('ehr-gateway:2.0.0');
    expect(imageOf('Deployment', 'gw-ehr-gateway-worker')).toBe('ehr-gateway:2.0.0');
    expect(imageOf('Deployment', 'gw-ehr-gateway-ehr')).toBe('ehr-gateway:1.9.0');
    expect(imageOf('Deployment', 'gw-ehr-gateway-emdr')).toBe('ehr-gateway:1.9.0');
    // By default every role runs the chart's appVersion.
    expect(containerOf(named('Deployment', 'gw-ehr-gateway-ehr')!).image).toBe('ehr-gateway:0.1.0');
  });

  it('runs the migrations as a Job before install and upgrade', () => {
    const job = named('Job', 'gw-ehr-gateway-migrate')!;
    expect(containerOf(job).args).toEqual(['migrate']);
    expect(job.metadata.annotations!['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    expect(job.spec.template.spec.restartPolicy).toBe('Never');
  });

  it('takes every secret from the Kubernetes Secret, and sets only variables the service knows', async () => {
    const known = new Set(CONFIG_VARIABLES.map((variable) => variable.name));
    const secrets = ['DATABASE_URL', 'DATA_KEY', 'DATA_KEY_PREVIOUS', 'INTERNAL_USERS'];
    const custom = await render('secret.name=hospital-secrets');
    for (const manifest of custom.filter((candidate) => candidate.kind === 'Deployment' || candidate.kind === 'Job')) {
      const { env } = containerOf(manifest);
      for (const variable of env) {
        expect(known, variable.name).toContain(variable.name);
        if (secrets.includes(variable.name)) {
          expect(variable.value, variable.name).toBeUndefined();
          expect(variable.valueFrom!.secretKeyRef).toMatchObject({ name: 'hospital-secrets', key: variable.name });
        }
      }
      const names = env.map((variable) => variable.name);
      expect(names).toEqual(expect.arrayContaining(['DATABASE_URL', 'DATA_KEY']));
      // Only interface A's role needs the authorization server's accounts.
      expect(names.includes('INTERNAL_USERS'), manifest.metadata.name).toBe(manifest.metadata.name.endsWith('-ehr'));
      expect(env.find((variable) => variable.name === 'DATA_KEY_PREVIOUS')!.valueFrom!.secretKeyRef.optional).toBe(true);
    }
  });

  it('keeps the internal listener off the public Services, and lets only Prometheus and the authorization server reach it', () => {
    const internalPort = 8081;
    for (const role of ['ehr', 'emdr']) {
      const service = named('Service', `gw-ehr-gateway-${role}`)!;
      expect(service.spec.ports).toEqual([expect.objectContaining({ name: 'http', targetPort: 'http' })]);
      expect(service.spec.selector['app.kubernetes.io/component']).toBe(role);
    }
    const internal = named('Service', 'gw-ehr-gateway-ehr-internal')!;
    expect(internal.spec.type).toBe('ClusterIP');
    expect(internal.spec.ports).toEqual([expect.objectContaining({ targetPort: 'internal', port: internalPort })]);
    for (const role of ROLES) {
      const policy = named('NetworkPolicy', `gw-ehr-gateway-${role}`)!;
      expect(policy.spec.podSelector.matchLabels['app.kubernetes.io/component']).toBe(role);
      expect(policy.spec.policyTypes).toEqual(['Ingress']);
      const rules = policy.spec.ingress as Array<{ ports: Array<{ port: number }>; from?: Array<{ podSelector: { matchLabels: Record<string, string> } }> }>;
      const internalRules = rules.filter((rule) => rule.ports.some((port) => port.port === internalPort));
      expect(internalRules.length).toBeGreaterThan(0);
      for (const rule of internalRules) expect(rule.from?.length, role).toBeGreaterThan(0);
      const allowed = internalRules.flatMap((rule) => rule.from!.map((peer) => peer.podSelector.matchLabels['app.kubernetes.io/name']));
      expect(allowed.sort()).toEqual(role === 'ehr' ? ['authorization-server', 'prometheus'] : ['prometheus']);
      expect(rules.some((rule) => rule.ports.some((port) => port.port === 8080))).toBe(role !== 'worker');
    }
  });
});
