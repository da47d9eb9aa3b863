/**
 * Engine elements: one JSON object per text frame (docs/engine-contract.md, "Frames"). Elements are kept as
 * received — unknown types and fields pass through untouched — and only read here, so the rest
 * of the service sees a turn as data: its text, tools and shown elements.
 */

/** One element as received: a string `type`, every other field kept untouched. */
export type Element = { type: string; [field: string]: unknown };

/** The engine's error code: FORBIDDEN, NOT_FOUND, INTERNAL, or one it adds later (kept as sent). */
export type EngineErrorCode = string;

/** Parses one frame; `undefined` for a frame that is not a JSON object with a string `type`. */
export function parseElement(frame: string): Element | undefined {
  if (frame.length === 0 || frame.charCodeAt(0) !== 0x7b /* { */) return undefined;
  try {
    const value: unknown = JSON.parse(frame);
    return typeof value === 'object' && value !== null && typeof (value as Element).type === 'string' ? (value as Element) : undefined;
  } catch {
    return undefined;
  }
}

const params = (element: Element): Record<string, unknown> =>
  typeof element.params === 'object' && element.params !== null ? (element.params as Record<string, unknown>) : {};

const commandName = (element: Element): string | undefined =>
  element.type === 'command' && typeof element.name === 'string' ? element.name : undefined;

export const isExit = (element: Element): boolean => element.type === 'exit';
export const endsSession = (element: Element): boolean => element.type === 'exit' && element.sessionEnded === true;
export const isSession = (element: Element): boolean => element.type === 'session' && typeof element.sessionId === 'string';

export function engineError(element: Element): { code: EngineErrorCode; message: string } | undefined {
  if (element.type !== 'error') return undefined;
  return {
    code: typeof element.code === 'string' ? element.code : 'INTERNAL',
    message: typeof element.message === 'string' ? element.message : '',
  };
}

export interface TurnSummary {
  text: string;
  tools: string[];
  shown: string[];
}

/** The spoken text joined, tool calls and interactive elements in order of appearance. */
export function summarize(elements: readonly Element[]): TurnSummary {
  const spoken: string[] = [];
  const tools: string[] = [];
  const shown: string[] = [];
  /** Tool calls started and not yet completed, by name: made only for a turn that calls a tool. */
  let running: Map<string, number> | undefined;
  for (const element of elements) {
    if (element.type === 'text' && typeof element.text === 'string') {
      const text = element.text.trim();
      if (text !== '') spoken.push(text);
      continue;
    }
    const name = commandName(element);
    if (name === 'tool-call') {
      const p = params(element);
      if (typeof p.name !== 'string') continue;
      // A call reports `started` then `completed`: count it once, also when only one arrives.
      running ??= new Map();
      const open = running.get(p.name) ?? 0;
      if (p.result === 'completed' && open > 0) running.set(p.name, open - 1);
      else {
        tools.push(p.name);
        if (p.result !== 'completed') running.set(p.name, open + 1);
      }
    } else if (name === 'multimodal-interaction') {
      const { ref } = params(element);
      if (typeof ref === 'string') shown.push(ref);
    }
  }
  return { text: spoken.join(' '), tools, shown };
}
