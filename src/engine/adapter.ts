/**
 * The engine adapter: everything the service says to the engine, the pipeline socket and the
 * memory endpoints, as docs/engine-contract.md describes them. Nothing outside `src/engine` knows a wire detail.
 */

import type { ConnectResult, ConnectSettings } from '../domain/vocabulary.js';
import { GatewayError } from '../errors.js';
import { createJsonClient, UpstreamError } from '../http/json-client.js';
import type { Config } from '../ops/config.js';
import type { Metrics } from '../ops/metrics.js';
import { socketUrl } from './socket-url.js';
import { openEngineSocket, type EngineSocket } from './socket.js';

export interface ConnectRequest {
  agentKey: string;
  settings: ConnectSettings;
  /** Set to reconnect to an existing engine session. */
  sessionId?: string;
  /** The project is closed to anonymous sessions: sign in with the engine test identity. */
  signIn: boolean;
}

export interface EngineAdapter {
  connect(req: ConnectRequest): Promise<EngineSocket>;
  /** The engine user of a simulated device; 404 `device_not_found` when it never connected. */
  deviceUser(deviceRef: string): Promise<string>;
  readMemory(userId: string): Promise<Array<Record<string, unknown>>>;
  /** The engine's own delete-then-write restore; answers how many units it loaded. */
  restoreMemory(userId: string, units: unknown[]): Promise<number>;
  close(): Promise<void>;
}

/** A JSON value's kind as a sentence names it: `a string`, `null`, `a list`, `an object`. */
const typeOf = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;

const resultOf = (err: unknown): ConnectResult => {
  if (!(err instanceof GatewayError)) return 'unavailable';
  if (err.code === 'identity_unrecognised') return 'unrecognised';
  if (err.code === 'identity_not_enabled') return 'not_enabled';
  return err.code === 'engine_unavailable' ? 'unavailable' : 'refused';
};

export function createEngineAdapter(config: Config, metrics: Metrics): EngineAdapter {
  const http = createJsonClient(config.engineUrl, { timeoutMs: config.engineConnectTimeoutMs });

  function signInHeaders(req: ConnectRequest): Record<string, string> {
    if (!req.signIn) return {};
    const identity = config.engineIdentity;
    if (identity.state === 'none') {
      throw new GatewayError(
        'identity_not_configured',
        `The project of agent:${req.agentKey} is closed to anonymous sessions and no engine test identity is configured ` +
          '(PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY); nothing was sent.',
      );
    }
    const header = identity.authorizationHeader();
    if (identity.state === 'malformed' || header === undefined) {
      throw new GatewayError(
        'identity_malformed',
        'The configured engine test identity is not HTTP Basic credentials (Basic <base64 of user:password> or user:password), ' +
          'so it was never sent; fix PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY.',
      );
    }
    return { authorization: header };
  }

  async function connect(req: ConnectRequest): Promise<EngineSocket> {
    const headers = signInHeaders(req);
    const kind = req.sessionId === undefined ? 'new' : 'reconnect';
    const stopTimer = metrics.engineConnectDuration.startTimer();
    try {
      // The engine may accept the socket and refuse the session on the first turn (a closed
      // project not admitting the test identity): the connect counts once that is known.
      const socket = await openEngineSocket(socketUrl(config.engineUrl, req.agentKey, req.settings, req.sessionId), {
        headers,
        timeoutMs: config.engineConnectTimeoutMs,
        maxPayload: config.engineMaxFrameBytes,
        ctx: { agentKey: req.agentKey, signedIn: req.signIn },
        onAdmission: (refusal) => metrics.engineConnects.inc({ result: refusal ? resultOf(refusal) : 'ok', kind }),
      });
      stopTimer();
      return socket;
    } catch (err) {
      stopTimer();
      metrics.engineConnects.inc({ result: resultOf(err), kind });
      throw err;
    }
  }

  /** Snapshot and restore calls counted by result, whatever asked for them (a route or a run). */
  async function memoryCall<T>(operation: 'snapshot' | 'restore', work: () => Promise<T>): Promise<T> {
    try {
      const result = await work();
      metrics.memoryCalls.inc({ operation, result: 'ok' });
      return result;
    } catch (err) {
      metrics.memoryCalls.inc({ operation, result: 'error' });
      throw err;
    }
  }

  async function call(method: 'GET' | 'POST', path: string, template: string, body?: unknown) {
    try {
      return await http.request({ method, path, template, body });
    } catch (err) {
      if (err instanceof UpstreamError) throw new GatewayError('engine_unavailable', `The engine ${err.message}.`);
      throw err;
    }
  }

  const unexpected = (what: string, status: number) =>
    new GatewayError('engine_unavailable', `The engine answered ${what} with HTTP ${status}.`);

  async function deviceUser(deviceRef: string): Promise<string> {
    const res = await call('GET', `/api/devices/${encodeURIComponent(deviceRef)}/user`, '/api/devices/{deviceId}/user');
    if (res.status === 404) {
      throw new GatewayError(
        'device_not_found',
        `The device ${deviceRef} never connected to the engine, so it has no engine user and no memory yet: ` +
          `start a conversation with device_ref ${deviceRef} first (with any agent), then call again.`,
      );
    }
    const userId = (res.body as { userId?: unknown } | undefined)?.userId;
    if (res.status !== 200 || typeof userId !== 'string') throw unexpected('the device look-up', res.status);
    return userId;
  }

  const readMemory = (userId: string) =>
    memoryCall('snapshot', async () => {
      const res = await call('GET', `/api/memory?userId=${encodeURIComponent(userId)}`, '/api/memory');
      if (res.status !== 200) throw unexpected('the memory read', res.status);
      const units = (res.body as { units?: unknown } | undefined)?.units;
      const malformed = (why: string) =>
        new GatewayError('engine_unavailable', `The engine's memory answer is not what its contract says: ${why}.`);
      if (!Array.isArray(units)) throw malformed(`units is ${units === undefined ? 'missing' : `${typeOf(units)}, not a list`}`);
      const odd = units.findIndex((u) => typeOf(u) !== 'an object');
      if (odd >= 0) throw malformed(`units[${odd}] is ${typeOf(units[odd])}, not a JSON object`);
      return units as Array<Record<string, unknown>>;
    });

  const restoreMemory = (userId: string, units: unknown[]) =>
    memoryCall('restore', async () => {
      const res = await call('POST', `/api/memory/restore?userId=${encodeURIComponent(userId)}`, '/api/memory/restore', {
        units,
      });
      const restored = (res.body as { restored?: unknown } | undefined)?.restored;
      if (res.status !== 200) throw unexpected('the memory restore', res.status);
      return typeof restored === 'number' ? restored : units.length;
    });

  return { connect, deviceUser, readMemory, restoreMemory, close: () => http.close() };
}
