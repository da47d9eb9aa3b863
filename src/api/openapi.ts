import { readFileSync } from 'node:fs';
import { collapseNullable } from './nullable.js';

/** openapi.yaml sits at the package root, one level above both src/ and dist/. */
const OPENAPI_PATH = new URL('../../openapi.yaml', import.meta.url);

type JsonSchema = Record<string, unknown>;

/** openapi.yaml, parsed once; `yaml` loads with the first caller (the document's route, the MCP report tools). */
let document: Promise<{ components: { schemas: Record<string, JsonSchema> } }> | undefined;

export const openApiDocument = (): Promise<{ components: { schemas: Record<string, JsonSchema> } }> =>
  (document ??= import('yaml').then(({ parse }) => parse(readFileSync(OPENAPI_PATH, 'utf8')) as never));

/** Built once per name: the same object each time, so that a serializer compiled from it compiles once. */
function builtOnce(build: (name: string) => Promise<JsonSchema>): (name: string) => Promise<JsonSchema> {
  const built = new Map<string, Promise<JsonSchema>>();
  return (name) => {
    let schema = built.get(name);
    if (schema === undefined) built.set(name, (schema = build(name)));
    return schema;
  };
}

/**
 * One of openapi.yaml's components, self-contained: every `$ref` to another component written
 * out in its place (a `$ref` beside other keywords keeps them too).
 */
export const openApiComponent = builtOnce(selfContained);

/** A component as a serializer reads it: a value or null as one type, so no value is tested against branches. */
export const serializedComponent = builtOnce(async (name) => collapseNullable(await openApiComponent(name)) as JsonSchema);

async function selfContained(name: string): Promise<JsonSchema> {
  const { schemas } = (await openApiDocument()).components;
  const inline = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(inline);
    if (typeof node !== 'object' || node === null) return node;
    const { $ref, ...rest } = node as JsonSchema;
    const own = Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, inline(value)]));
    if (typeof $ref !== 'string') return own;
    return { ...(inline(schemas[$ref.split('/').at(-1)!]) as JsonSchema), ...own };
  };
  return inline(schemas[name]) as JsonSchema;
}
