import type { RawData } from 'ws';

/**
 * The text of one WebSocket message as ws hands it over: a Buffer with the default binaryType,
 * an ArrayBuffer or a list of fragments with the others. No copy for the Buffer case.
 */
export function frameText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString();
  return (Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)).toString();
}
