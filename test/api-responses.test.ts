import t from 'tap';
import { componentSchemas } from '../src/api/responses.js';
import type { Json } from './support/http.js';
import { doc } from './support/openapi.js';

/**
 * The response shapes are declared once, in src/api/responses.ts: the routes serialize with them
 * and the MCP tools declare them. openapi.yaml's components must say the same: equal once the
 * prose (descriptions, examples) is set aside and lists whose order means nothing are sorted.
 */
const PROSE = new Set(['description', 'examples', 'example', '$comment']);
const UNORDERED = new Set(['required', 'enum']);

function normalize(node: Json): Json {
  if (Array.isArray(node)) return node.map(normalize);
  if (typeof node !== 'object' || node === null) return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([key]) => !PROSE.has(key))
      .map(([key, value]) => [
        key,
        UNORDERED.has(key) && Array.isArray(value) ? [...value].sort((a, b) => String(a).localeCompare(String(b))) : normalize(value),
      ]),
  );
}

const declared = componentSchemas();

t.test('every response shape is an openapi.yaml component, and says the same', async (t) => {
  for (const [id, schema] of Object.entries(declared)) {
    const inDoc = doc.components.schemas[id];
    t.ok(inDoc, `openapi.yaml declares components.schemas.${id}`);
    t.strictSame(normalize(inDoc), normalize(schema), `components.schemas.${id} equals src/api/responses.ts`);
  }
});

t.test('the shapes the routes answer are all declared once', async (t) => {
  for (const id of ['TurnResult', 'Conversation', 'ConversationList', 'MemorySnapshot', 'RestoreResult', 'Error', 'Readiness', 'Health']) {
    t.ok(declared[id], `${id} is in src/api/responses.ts`);
  }
});
