import { readFileSync } from 'node:fs';

/** openapi.yaml sits at the package root, one level above both src/ and dist/. */
const OPENAPI_PATH = new URL('../../openapi.yaml', import.meta.url);

type JsonSchema = Record<string, unknown>;

/** openapi.yaml, parsed once; `yaml` loads with the first caller (the document's route, the MCP report tools). */
let document: Promise<{ components: { schemas: Record<string, JsonSchema> } }> | undefined;

export const openApiDocument = (): Promise<{ components: { schemas: Record<string, JsonSchema> } }> =>
  (document ??= import('yaml').then(({ parse }) => parse(readFileSync(OPENAPI_PATH, 'utf8')) as never));

/**
 * One of openapi.yaml's components, self-contained: every `$ref` to another component written
 * out in its place (a `$ref` beside other keywords keeps them too).
 */
export async function openApiComponent(name: string): Promise<JsonSchema> {
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
