import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { repoRoot } from '../support/cli.js';
import { exposedSeriesNames, seriesNames } from '../support/promql.js';
import { startTestService, type TestService } from '../support/service.js';

const run = promisify(execFile);

/**
 * deploy/grafana's dashboard and deploy/prometheus's alerts against what /metrics really serves:
 * every series a panel or a rule reads is one the service declares, and promtool parses every query.
 * (promtool check rules / test rules on the rule files themselves run in make check-deploy.)
 */
const PROMTOOL = path.join(repoRoot, '.tools/prometheus/usr/bin/promtool');
/** Made by Prometheus itself, not by the service. */
const PROMETHEUS_SERIES = new Set(['up']);

interface Panel {
  type: string;
  title: string;
  datasource?: { uid: string };
  targets?: Array<{ expr: string }>;
  panels?: Panel[];
}
interface Dashboard {
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; definition?: string }> };
}
interface Rules {
  groups: Array<{ rules: Array<{ alert?: string; expr: string }> }>;
}

const dashboard = JSON.parse(fs.readFileSync(path.join(repoRoot, 'deploy/grafana/ehr-gateway.json'), 'utf8')) as Dashboard;
const rules = parseYaml(fs.readFileSync(path.join(repoRoot, 'deploy/prometheus/ehr-gateway.rules.yml'), 'utf8')) as Rules;
const panels = dashboard.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])]).filter((panel) => panel.type !== 'row');
const panelQueries = panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ where: `panel "${panel.title}"`, expr: target.expr })));
const variableQueries = dashboard.templating.list
  .filter((variable) => variable.type === 'query')
  .map((variable) => ({ where: `variable ${variable.name}`, expr: /^label_values\((\w+),/.exec(variable.definition!)![1]! }));
const ruleQueries = rules.groups.flatMap((group) => group.rules.map((rule) => ({ where: `alert ${rule.alert}`, expr: rule.expr })));

/** Grafana's variables as a query would run: $__rate_interval and $job filled in. */
const asPromql = (expr: string) => expr.replaceAll('$__rate_interval', '5m').replaceAll('$job', 'ehr-gateway');

let service: TestService;
let trustStore: string;

beforeAll(async () => {
  // A trust store, so that the worker role declares the expiry gauge too.
  trustStore = fs.mkdtempSync(path.join(os.tmpdir(), 'ehr-gateway-trust-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      '/CN=monitoring test root',
      '-days',
      '30',
      '-keyout',
      path.join(trustStore, 'root.key'),
      '-out',
      path.join(trustStore, 'root.pem'),
    ],
    { stdio: 'ignore' },
  );
  fs.rmSync(path.join(trustStore, 'root.key'));
  service = await startTestService({ SIGNATURE_TRUST_STORE: trustStore });
});

afterAll(async () => {
  await service?.stop();
  fs.rmSync(trustStore, { recursive: true, force: true });
});

describe('the Grafana dashboard and the Prometheus alerts', () => {
  it('read only series that /metrics declares (every role of one process), and each query reads one', async () => {
    const exposition = await (await fetch(`${service.internalUrl}/metrics`)).text();
    const exposed = exposedSeriesNames(exposition);
    expect(exposed).toContain('ehr_gateway_database_up');
    expect(exposed).toContain('ehr_gateway_trust_store_earliest_expiry_timestamp_seconds');
    expect(panelQueries.length).toBeGreaterThan(20);
    expect(ruleQueries.length).toBeGreaterThan(10);
    const unknown: string[] = [];
    for (const { where, expr } of [...panelQueries, ...variableQueries, ...ruleQueries]) {
      const names = seriesNames(asPromql(expr));
      expect(names.length, `${where}: ${expr}`).toBeGreaterThan(0);
      for (const name of names) if (!exposed.has(name) && !PROMETHEUS_SERIES.has(name)) unknown.push(`${where}: ${name}`);
    }
    expect(unknown).toEqual([]);
    // The trust store's expiry as served: the test root's, 30 days ahead.
    const expiry = Number(/^ehr_gateway_trust_store_earliest_expiry_timestamp_seconds (\d+)$/m.exec(exposition)![1]);
    expect(Math.abs(expiry - (Date.now() / 1000 + 30 * 86400))).toBeLessThan(3600);
  });

  it("every panel queries the dashboard's Prometheus variable, and promtool parses every query", async () => {
    for (const panel of panels) {
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's own variable syntax, not a template literal.
      expect(panel.datasource?.uid, panel.title).toBe('${datasource}');
    }
    expect(fs.existsSync(PROMTOOL), `${PROMTOOL} is missing: run make promtool`).toBe(true);
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'ehr-gateway-dashboard-'));
    try {
      // Each query as a recording rule: promtool check rules parses its expression.
      const file = path.join(folder, 'panels.yml');
      const recorded = panelQueries.map(({ expr }, index) => ({ record: `dashboard:query_${index}`, expr: asPromql(expr) }));
      fs.writeFileSync(file, JSON.stringify({ groups: [{ name: 'dashboard', rules: recorded }] }));
      const { stdout } = await run(PROMTOOL, ['check', 'rules', file]);
      expect(stdout).toContain(`SUCCESS: ${recorded.length} rules found`);
    } finally {
      fs.rmSync(folder, { recursive: true, force: true });
    }
  });

  it('has a unit test of each alert in deploy/prometheus/tests', () => {
    const tests = fs
      .readdirSync(path.join(repoRoot, 'deploy/prometheus/tests'))
      .map((file) => fs.readFileSync(path.join(repoRoot, 'deploy/prometheus/tests', file), 'utf8'))
      .join('\n');
    for (const { alert } of rules.groups.flatMap((group) => group.rules))
      expect(tests, alert).toMatch(new RegExp(`alertname: ${alert}\\n[\\s\\S]*?exp_alerts:\\n\\s+- exp_labels`));
  });
});

describe('seriesNames', () => {
  it('finds the series of an expression, not its functions, aggregations, labels, strings or units', () => {
    expect(
      seriesNames('histogram_quantile(0.95, sum by (le, operation) (rate(ehr_gateway_api_request_duration_seconds_bucket{operation="RegisterDocument"}[5m])))'),
    ).toEqual(['ehr_gateway_api_request_duration_seconds_bucket']);
    expect(seriesNames('sum(rate(a_total{status=~"5.."}[5m])) / sum without (instance) (rate(b_total[1h] offset 1d)) > 0.05 and on (job) up == 1')).toEqual([
      'a_total',
      'b_total',
      'up',
    ]);
    expect(seriesNames('(x_seconds - time()) / 86400 < 30 * 1e3')).toEqual(['x_seconds']);
  });
});
