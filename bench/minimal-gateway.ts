// A yardstick for `npm run bench:ab`, not a product: a gateway that does only a turn's wire work
// (one HTTP request in, the line out on the conversation's engine socket, the elements back, JSON
// out) with no validation, authorization, limits, metrics, timers or views. What the gateway
// spends above it is the price of those.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import WebSocket from 'ws';
import { DEVICE_NAMESPACE, settingsFrom } from '../src/domain/vocabulary.js';
import { socketUrl } from '../src/engine/socket-url.js';
import { frameText } from '../src/http/ws-frames.js';
import { exitWhenParentGoes } from './child.js';

interface Held {
  ws: WebSocket;
  sessionId: string;
  elements: object[];
  turnEnded: ((elements: object[]) => void) | undefined;
}

const engineUrl = process.env.PROMETHIST_MCP_ENGINE_URL!;
const held = new Map<string, Held>();
const PATH = /^\/v1\/agents\/([^/]+)\/conversations(?:\/([^/]+)\/turns)?$/;

function open(agentKey: string): Promise<Held> {
  const settings = settingsFrom({}, () => `${DEVICE_NAMESPACE}${randomUUID()}`);
  const ws = new WebSocket(socketUrl(engineUrl, agentKey, settings), { perMessageDeflate: false });
  return new Promise((resolve, reject) => {
    ws.once('error', reject);
    ws.once('message', (data) => {
      const conv: Held = {
        ws,
        sessionId: (JSON.parse(frameText(data)) as { sessionId: string }).sessionId,
        elements: [],
        turnEnded: undefined,
      };
      ws.on('message', (frame) => {
        const element = JSON.parse(frameText(frame)) as { type: string };
        conv.elements.push(element);
        if (element.type !== 'exit') return;
        const ended = conv.turnEnded;
        const elements = conv.elements;
        conv.turnEnded = undefined;
        conv.elements = [];
        ended?.(elements);
      });
      resolve(conv);
    });
  });
}

const turn = (conv: Held, line: string): Promise<object[]> =>
  new Promise((resolve) => {
    conv.turnEnded = resolve;
    conv.ws.send(line);
  });

const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => (body += chunk));
  req.on('end', () => {
    void (async () => {
      if (req.url === '/readyz') return res.end('{"ready":true}');
      const [, agentKey, sessionId] = (req.method === 'POST' && PATH.exec(req.url ?? '')) || [];
      if (agentKey === undefined) return res.writeHead(404).end();
      const known = sessionId === undefined ? undefined : held.get(sessionId);
      const conv = known ?? (await open(agentKey));
      held.set(conv.sessionId, conv);
      const line = (JSON.parse(body || '{}') as { line?: string }).line ?? '#intro';
      const elements = await turn(conv, line);
      res.writeHead(known === undefined ? 201 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ session_id: conv.sessionId, turn: { line, outcome: 'exit', elements } }));
    })();
  });
});

exitWhenParentGoes(() => {
  for (const conv of held.values()) conv.ws.close(1000);
  server.close();
});
server.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
