/**
 * Debian's real Prometheus for a test: it scrapes one target on loopback every second and
 * evaluates the chart's rules (files/prometheus-rules.yaml, as they are) every second; its HTTP
 * API answers the queries, rules and alerts. The chart's Grafana dashboard with its variables
 * filled in as it opens, for checking that each panel's query returns data.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { chartDir } from './chart.js';
import { freePort } from './http.js';
import { scaled, sleep } from './time.js';
import { toolPath } from './tools.js';

const PROMETHEUS = toolPath('prometheus') ?? '/usr/bin/prometheus';
const chartFiles = join(chartDir, 'files');
const RULES = join(chartFiles, 'prometheus-rules.yaml');

export interface Panel {
  title: string;
  targets?: Array<{ expr: string }>;
}

export const dashboard = JSON.parse(readFileSync(join(chartFiles, 'grafana-dashboard.json'), 'utf8')) as { panels: Panel[] };

/** The dashboard's monitors row (its panels' titles start "Monitors"): they need monitored runs. */
export const isMonitorsPanel = (panel: Panel): boolean => panel.title.startsWith('Monitors');

/** The monitors row's attack panels: they need monitored runs of an attack suite. */
export const isAttackPanel = (panel: Panel): boolean => panel.title.startsWith('Monitors: attack');

/** Grafana's variables as the dashboard opens: every namespace and pod, a 1 m rate window. */
export const substitute = (expr: string): string =>
  expr
    .replaceAll('$__rate_interval', '1m')
    .replaceAll('$job', 'agent-test-gateway')
    .replaceAll('$namespace', '.*')
    .replaceAll('$instance', '.*');

export interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface RuleState {
  name: string;
  type: 'recording' | 'alerting';
  health: string;
  lastError?: string;
  lastEvaluation: string;
  state?: string;
}

export interface Alert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
  value: string;
}

export interface Prometheus {
  query: (promql: string) => Promise<Sample[]>;
  rules: () => Promise<RuleState[]>;
  /** /api/v1/alerts: the alerts pending or firing. */
  alerts: () => Promise<Alert[]>;
  /** Waits until Prometheus has scraped the target once (it applies its targets a few seconds after it starts). */
  scraped: () => Promise<void>;
}

/**
 * Polls `check` until it answers something other than undefined, and answers that; fails after
 * `ms` as on an idle machine (scaled), saying what did not happen. A deadline, never a guess.
 */
export async function until<T>(what: string, check: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + scaled(ms);
  for (;;) {
    const answer = await check();
    if (answer !== undefined) return answer;
    if (Date.now() > deadline) throw new Error(`prometheus: ${what} not seen in ${scaled(ms) / 1000} s`);
    await sleep(200);
  }
}

export async function startPrometheus(t: { teardown(fn: () => unknown): void }, target: string): Promise<Prometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'agw-prometheus-'));
  const port = await freePort();
  writeFileSync(
    join(dir, 'prometheus.yml'),
    [
      'global: { scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s }',
      `rule_files: [${JSON.stringify(RULES)}]`,
      'scrape_configs:',
      '  - job_name: agent-test-gateway',
      `    static_configs: [{ targets: [${JSON.stringify(target)}] }]`,
      '',
    ].join('\n'),
  );
  const child = spawn(
    PROMETHEUS,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  t.teardown(async () => {
    child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  });
  const base = `http://127.0.0.1:${port}`;
  const ready = async () =>
    (await request(`${base}/-/ready`).then(
      (r) => (r.body.dump(), r.statusCode),
      () => 0,
    )) === 200;
  const readyBy = Date.now() + scaled(15_000);
  while (!(await ready())) {
    if (Date.now() > readyBy || child.exitCode !== null) throw new Error(`prometheus did not become ready: ${stderr}`);
    await sleep(100);
  }
  const api = async <T>(path: string): Promise<T> => {
    const answer = (await (await request(`${base}${path}`)).body.json()) as { status: string; data: T };
    if (answer.status !== 'success') throw new Error(`${path} failed`);
    return answer.data;
  };
  const query = async (promql: string) => (await api<{ result: Sample[] }>(`/api/v1/query?query=${encodeURIComponent(promql)}`)).result;
  return {
    query,
    rules: async () => (await api<{ groups: Array<{ rules: RuleState[] }> }>('/api/v1/rules')).groups.flatMap((g) => g.rules),
    alerts: async () => (await api<{ alerts: Alert[] }>('/api/v1/alerts')).alerts,
    scraped: async () => {
      await until('a first scrape of the gateway', async () =>
        (await query('up{job="agent-test-gateway"} == 1')).length > 0 ? true : undefined,
      );
    },
  };
}
