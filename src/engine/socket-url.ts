/**
 * The pipeline socket URL (docs/engine-contract.md, "The engine's pipeline socket").
 *
 * The engine decodes the query twice: the whole raw query first, then each name and value after
 * splitting on `&` and `=`. Encoding every value twice makes the first pass yield a query whose
 * values still carry no bare `&`, `=`, `+` or `%`, and the second pass yield the value exactly as
 * validated — so `Etc/GMT+1` stays `Etc/GMT+1` and no value can smuggle in `testMode=false`.
 */

import type { ConnectSettings } from '../domain/vocabulary.js';

const encodeForDoubleDecoding = (value: string): string => encodeURIComponent(encodeURIComponent(value));

export function socketUrl(engineUrl: string, agentKey: string, settings: ConnectSettings, sessionId?: string): string {
  const base = engineUrl.replace(/^http/i, 'ws');
  const params: Array<[string, string | null | undefined]> = [
    ['inputFormat', 'TEXT'],
    ['outputFormat', 'JSON'],
    ['locale', settings.locale],
    ['deviceId', settings.deviceRef],
    ['timeZone', settings.timeZone],
    ['runLabel', settings.runLabel],
    ['timeOffset', settings.timeOffset],
    ['sessionId', sessionId],
    // Last, so that even a parameter that somehow arrived twice is overruled: the engine reads
    // timeOffset only in test mode, and a later parameter of the same name wins.
    ['testMode', 'true'],
  ];
  const query = params
    .filter((entry): entry is [string, string] => typeof entry[1] === 'string')
    .map(([name, value]) => `${name}=${encodeForDoubleDecoding(value)}`)
    .join('&');
  return `${base}/socket/pipeline/agent:${encodeURIComponent(agentKey)}?${query}`;
}
