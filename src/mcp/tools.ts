import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import { parse } from '../schemas/requests.js';
import { refusal } from './results.js';

/**
 * Every tool is registered here, so that its arguments are checked by the gateway's own rules, as
 * REST checks a request: arguments that break a rule answer a tool error (`isError: true`) with
 * the REST API's code and sentence (`invalid_request: line may start with # only as exactly
 * #intro: …; nothing was sent to the engine`), and the tool does not run.
 *
 * The SDK would check them itself against the input schema and answer its own words
 * (`MCP error -32602: Input validation error: …`), so it is given a schema that lets every object
 * through, described in tools/list (through its metadata) as the tool's real input schema.
 */
export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export interface ToolConfig<In extends z.ZodObject> {
  title: string;
  description: string;
  inputSchema: In;
  outputSchema: z.ZodObject;
  annotations: ToolAnnotations;
}

export function registerTool<In extends z.ZodObject>(
  server: McpServer,
  log: FastifyBaseLogger,
  name: string,
  config: ToolConfig<In>,
  handler: (args: z.output<In>, extra: Extra) => Promise<CallToolResult>,
): RegisteredTool {
  const { inputSchema, ...rest } = config;
  return server.registerTool(name, { ...rest, inputSchema: listedAs(inputSchema) }, async (raw, extra) => {
    let args: z.output<In>;
    try {
      args = parse(inputSchema, raw, 'arguments');
    } catch (err) {
      return refusal(err, log);
    }
    return handler(args, extra);
  });
}

/** One per input schema: every MCP session registers the same tools. */
const listed = new WeakMap<z.ZodObject, z.ZodObject>();

/** Any object, listed as `schema` in the dialect of the SDK's tools/list (JSON Schema draft-07, the input side). */
export function listedAs(schema: z.ZodObject): z.ZodObject {
  let open = listed.get(schema);
  if (open === undefined) {
    const { $schema: _, ...json } = z.toJSONSchema(schema, { target: 'draft-7', io: 'input' });
    open = z.looseObject({}).meta(portable(json) as Record<string, unknown>);
    listed.set(schema, open);
  }
  return open;
}

type JsonSchema = Record<string, unknown>;

const isEmpty = (value: unknown): boolean => typeof value === 'object' && value !== null && Object.keys(value).length === 0;

/** Keywords whose value maps names to schemas. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions']);
/** Keywords that say nothing about the value. */
const PROSE = new Set(['description', 'title', 'examples', 'default', '$comment']);
/** Any JSON value, as single-`type` branches. */
const ANY_VALUE = ['string', 'number', 'boolean', 'object', 'array', 'null'].map((type) => ({ type }));

/**
 * What JSON Schema allows but MCP clients read badly (the MCP Inspector's `--strict` check names
 * them), in the spelling they read: a nullable type as two `anyOf` branches, not a `type` array
 * (an enum keeps its values in the non-null branch); a free-form object's other fields as
 * `additionalProperties: true`, not `{}`; a schema that accepts any value (only prose) as one
 * branch per JSON type.
 */
export function portable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(portable);
  if (typeof node !== 'object' || node === null) return node;
  const out: JsonSchema = Object.fromEntries(
    Object.entries(node as JsonSchema).map(([key, value]) => [
      key,
      SCHEMA_MAPS.has(key) && typeof value === 'object' && value !== null
        ? Object.fromEntries(Object.entries(value as JsonSchema).map(([name, schema]) => [name, portable(schema)]))
        : portable(value),
    ]),
  );
  if (isEmpty(out.additionalProperties)) out.additionalProperties = true;
  const { type, description, ...constraints } = out;
  if (type === undefined && Object.keys(constraints).every((key) => PROSE.has(key)) && description !== undefined) {
    return { description, anyOf: ANY_VALUE };
  }
  const types: unknown[] = Array.isArray(type) ? type : [];
  if (types.length !== 2 || !types.includes('null')) return out;
  const branch: JsonSchema = { ...constraints, type: types.find((t) => t !== 'null') };
  if (Array.isArray(branch.enum)) branch.enum = branch.enum.filter((value) => value !== null);
  return { ...(description === undefined ? {} : { description }), anyOf: [branch, { type: 'null' }] };
}
