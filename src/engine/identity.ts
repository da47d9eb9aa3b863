/**
 * The engine test identity (PROMETHIST_TESTING_ENGINE_BASIC_IDENTITY), parsed once at start-up.
 * The header value lives in a private field and the object prints as "[redacted]" through
 * JSON, util.inspect and pino alike, so a stray log of the config cannot leak it.
 */

import { inspect } from 'node:util';

export type IdentityState = 'none' | 'malformed' | 'ok';

export class EngineIdentity {
  readonly #header: string | undefined;
  readonly state: IdentityState;

  constructor(state: IdentityState, header?: string) {
    this.state = state;
    this.#header = header;
  }

  /** The `Authorization` header value; only for the engine upgrade request. */
  authorizationHeader(): string | undefined {
    return this.#header;
  }

  toJSON(): string {
    return `[redacted: ${this.state}]`;
  }

  [inspect.custom](): string {
    return this.toJSON();
  }
}

const validCredentials = (decoded: string): boolean => {
  const colon = decoded.indexOf(':');
  const user = decoded.slice(0, colon);
  // user-id has no colon (RFC 7617) and, here, no white space: "Bearer a:b" is not a user.
  return colon > 0 && !/[\s\p{Cc}]/u.test(user) && !/\p{Cc}/u.test(decoded);
};

/** Accepts `Basic <base64 of user:password>` or `user:password`; anything else is malformed. */
export function parseEngineIdentity(raw: string | undefined): EngineIdentity {
  const value = raw?.trim() ?? '';
  if (value === '') return new EngineIdentity('none');
  const basic = /^basic\s+([A-Za-z0-9+/]+={0,2})$/i.exec(value);
  if (basic?.[1] !== undefined) {
    const token = basic[1];
    const decoded = Buffer.from(token, 'base64').toString('utf8');
    const roundTrips = Buffer.from(decoded, 'utf8').toString('base64').replace(/=+$/, '') === token.replace(/=+$/, '');
    return roundTrips && validCredentials(decoded) ? new EngineIdentity('ok', `Basic ${token}`) : new EngineIdentity('malformed');
  }
  if (!/^basic\s/i.test(value) && validCredentials(value)) {
    return new EngineIdentity('ok', `Basic ${Buffer.from(value, 'utf8').toString('base64')}`);
  }
  return new EngineIdentity('malformed');
}
