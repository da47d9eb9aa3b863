// What the engine simulator records of what the gateway sent it (every upgrade, line and memory
// request), the faults it can be told to make, and how it reads a socket's query: the engine's
// double decoding, which the gateway's tests check its encoder against.

export interface EngineConnection {
  id: number;
  path: string;
  /** `ref` or `ref.N`, from `agent:{agentKey}` */
  agentKey: string;
  /** the revision number the engine runs for the key, once admitted */
  revision?: number;
  /** the query string exactly as it arrived */
  rawQuery: string;
  /** every parameter after the engine's double decoding, in order */
  params: Array<[string, string]>;
  /** the parameters as the engine uses them: a later one of the same name wins */
  query: Record<string, string>;
  /** what the engine made of the query; `timeOffset` only when `testMode` is `true` */
  settings: {
    testMode: boolean;
    locale?: string;
    deviceId?: string;
    timeZone?: string;
    runLabel?: string;
    timeOffset?: string;
  };
  authorization?: string;
  /** the handshake's answer: 101 when upgraded, else the refusal; absent while a `hang` fault holds it */
  status?: number;
  /** the lines received */
  frames: string[];
  closeCode?: number;
  closeReason?: string;
  closedBy?: 'client' | 'engine';
  sessionId?: string;
  resumed?: boolean;
  openedAt: number;
  closedAt?: number;
}

export interface MemoryRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  at: number;
}

export interface EngineFaults {
  /** answer the upgrade with this status, or never */
  handshake?: number | 'hang';
  /** accept the socket and never send the session element (nor answer a line) */
  silentAfterConnect?: boolean;
  /** answer memory reads against the contract: HTTP 500, `units` not a list, or a unit that is not an object */
  memoryRead?: 'http_500' | 'units_not_list' | 'unit_not_object';
}

/** Percent-decodes with `+` as a space, keeping a malformed `%` sequence as it is. */
function formDecode(s: string): string {
  return s.replace(/\+/g, ' ').replace(/(?:%[0-9a-fA-F]{2})+/g, (run) => Buffer.from(run.replace(/%/g, ''), 'hex').toString('utf8'));
}

/**
 * The engine's query decoding, as docs/engine-contract.md describes it: decode the whole raw query, split on
 * `&` and the first `=`, decode each name and value again; a later parameter wins; a backtick
 * in a value arrives as a space. Exported so that the gateway's tests can check its encoder
 * against it.
 */
export function decodeEngineQuery(rawQuery: string): { params: Array<[string, string]>; query: Record<string, string> } {
  const params: Array<[string, string]> = [];
  for (const part of formDecode(rawQuery).split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = formDecode(eq < 0 ? part : part.slice(0, eq));
    const value = eq < 0 ? '' : formDecode(part.slice(eq + 1)).replaceAll('`', ' ');
    params.push([name, value]);
  }
  return { params, query: Object.fromEntries(params) };
}
