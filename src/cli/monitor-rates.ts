import { request } from 'undici';

/**
 * A monitor's baseline pass rates from Prometheus: the 7-day pass rate per conversation that the
 * chart's rules record for the alerts (`agent_test_gateway:monitor_conversation_pass_rate:7d`,
 * invalid attempts left out), averaged over the namespaces and jobs that report the monitor, one
 * per conversation in the order of their names. Read through Prometheus's HTTP API (`/api/v1/query`).
 */
const MONITOR_RATE_SERIES = 'agent_test_gateway:monitor_conversation_pass_rate:7d';

const TIMEOUT_MS = 10_000;

interface VectorAnswer {
  status?: unknown;
  error?: unknown;
  data?: { resultType?: unknown; result?: Array<{ metric?: Record<string, unknown>; value?: unknown }> };
}

/** The rates, or why there are none (a sentence for the command's stderr). */
export async function monitorRates(prometheus: string, monitor: string): Promise<{ rates: number[] } | { problem: string }> {
  // The monitor's name is checked by the caller: letters, digits, '.', '_' and '-' only.
  const query = `avg by (conversation) (${MONITOR_RATE_SERIES}{monitor="${monitor}"})`;
  let url: URL;
  try {
    url = new URL(`api/v1/query?query=${encodeURIComponent(query)}`, prometheus.endsWith('/') ? prometheus : `${prometheus}/`);
  } catch {
    return { problem: `--from-prometheus ${prometheus}: not a URL` };
  }
  let answer: VectorAnswer;
  try {
    const response = await request(url, { headersTimeout: TIMEOUT_MS, bodyTimeout: TIMEOUT_MS });
    answer = (await response.body.json()) as VectorAnswer;
    if (response.statusCode !== 200 || answer.status !== 'success') {
      const why = typeof answer.error === 'string' ? answer.error : 'no result';
      return { problem: `Prometheus at ${url.origin} answered ${response.statusCode}: ${why}` };
    }
  } catch (error) {
    return { problem: `could not ask Prometheus at ${url.origin}: ${(error as Error).message}` };
  }
  const series = (answer.data?.resultType === 'vector' ? (answer.data.result ?? []) : [])
    .map((item) => ({
      conversation: typeof item.metric?.conversation === 'string' ? item.metric.conversation : '',
      rate: Number((item.value as [unknown, unknown] | undefined)?.[1]),
    }))
    .filter(({ rate }) => rate >= 0 && rate <= 1)
    .sort((a, b) => a.conversation.localeCompare(b.conversation));
  if (series.length === 0) {
    return {
      problem:
        `Prometheus at ${url.origin} has no ${MONITOR_RATE_SERIES} for monitor ${monitor}: ` +
        `has the monitor run in the last 7 days, and does Prometheus load the chart's rules?`,
    };
  }
  return { rates: series.map(({ rate }) => rate) };
}
