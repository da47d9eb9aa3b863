type JsonSchema = Record<string, unknown>;

/**
 * A value or null written as JSON Schema's plain spelling, `type: [T, 'null']`, where it is
 * written as two branches (`anyOf` or `oneOf` of a typed schema and `{type: 'null'}`): openapi.yaml
 * spells it that way, and a serializer compiled from it writes the value without first testing
 * which branch it is in (a test that would fail a whole report over one odd value).
 */
export function collapseNullable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(collapseNullable);
  if (typeof node !== 'object' || node === null) return node;
  const out: JsonSchema = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, collapseNullable(v)]));
  const key = Array.isArray(out.anyOf) ? 'anyOf' : 'oneOf';
  const branches = out[key];
  if (!Array.isArray(branches) || branches.length !== 2) return out;
  const nullAt = branches.findIndex((b: JsonSchema) => b.type === 'null' && Object.keys(b).length === 1);
  const other = branches[1 - nullAt] as JsonSchema | undefined;
  if (nullAt === -1 || other === undefined || typeof other.type !== 'string') return out;
  const { [key]: _, ...rest } = out;
  return {
    ...rest,
    ...other,
    type: [other.type, 'null'],
    ...(Array.isArray(other.enum) ? { enum: [...(other.enum as unknown[]), null] } : {}),
  };
}
