import { z } from 'zod';
import { errorStatus, type ErrorCode } from '../errors.js';
import { CLOSE_CAUSES, TURN_OUTCOMES } from '../domain/vocabulary.js';
import { collapseNullable } from './nullable.js';

/**
 * The API's response shapes, declared once. The routes serialize with them (Fastify's compiled
 * serializer, from `responseSchema`), the MCP tools declare them as output schemas, and
 * test/api-responses.test.ts holds openapi.yaml's components equal to them. Each shape is
 * registered under its openapi.yaml component name, so the components are `componentSchemas()`.
 */
const components = z.registry<{ id: string; format?: string }>();

const named = <S extends z.ZodType>(id: string, schema: S, extra: { format?: string } = {}): S => {
  components.add(schema, { id, ...extra });
  return schema;
};

/**
 * An object that passes unknown fields through: engine elements and memory units are kept as
 * received. `additionalProperties: true` (not `{}`) so that MCP clients read it as intended.
 */
const openObject = <Shape extends z.ZodRawShape>(shape: Shape) => z.looseObject(shape).meta({ additionalProperties: true });

/**
 * A value or null. zod writes a nullable bare type as a `type` array (`["string", "null"]`),
 * which some MCP clients reject; with a description it stays an `anyOf` of two branches.
 */
const nullable = <S extends z.ZodType>(schema: S, description: string) => schema.describe(description).nullable();

const count = (min: number) => z.int().min(min);
const timestamp = z.iso.datetime();

const SessionId = named('SessionId', z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/), {
  format: 'uuid',
});
const AgentKey = named('AgentKey', z.string().regex(/^agent:[A-Za-z0-9_.-]+$/));
const DeviceKey = named('DeviceKey', z.string().regex(/^mcp:[\p{L}\p{Nd}._:@-]+$/u));
const Notes = named('Notes', z.array(z.string()));
const Element = named('Element', openObject({ type: z.string() }));
const MemoryUnit = named('MemoryUnit', openObject({}));

/** The connect settings as results show them. */
const settings = {
  device_ref: DeviceKey,
  locale: z.string(),
  time_zone: nullable(z.string(), 'The IANA time zone sent to the engine; null: none.'),
  run_label: nullable(z.string(), 'The run label sent to the engine; null: none.'),
  time_offset: nullable(z.string(), 'How far back the conversation is dated, a negative ISO-8601 duration; null: not backdated.'),
};
const connection = z.enum(['open', 'closed']);

const Turn = named(
  'Turn',
  z.object({
    line: z.string(),
    outcome: z.enum(TURN_OUTCOMES),
    elements: z.array(Element),
    text: z.string(),
    tools: z.array(z.string()),
    shown: z.array(z.string()),
    duration_ms: count(0),
  }),
);

const TurnConversation = named(
  'TurnConversation',
  z.object({
    ...settings,
    turns: count(1),
    connection,
    ended_by_agent: z.boolean(),
    reconnected: z.boolean(),
    planning_lost: z.boolean(),
  }),
);

export const TurnResult = named(
  'TurnResult',
  z.object({ session_id: SessionId, agent: AgentKey, turn: Turn, conversation: TurnConversation, notes: Notes }),
);

/** `moved` closes a socket whose conversation a sibling took over: that conversation is then shown as the sibling's, never with it. */
const SHOWN_CLOSE_CAUSES = CLOSE_CAUSES.filter((cause) => cause !== 'moved');

export const Conversation = named(
  'Conversation',
  z.object({
    session_id: SessionId,
    agent: AgentKey,
    connection,
    state: z.enum(['connecting', 'idle', 'busy', 'closed']),
    busy: z.boolean(),
    turns: count(0),
    ...settings,
    ended_by_agent: z.boolean(),
    created_at: timestamp,
    last_turn_at: timestamp.nullable(),
    idle_seconds: count(0),
    close_cause: z.enum(SHOWN_CLOSE_CAUSES).nullable(),
    closed_at: timestamp.nullable(),
    notes: Notes,
  }),
);

export const ConversationList = named('ConversationList', z.object({ conversations: z.array(Conversation) }));

export const MemorySnapshot = named(
  'MemorySnapshot',
  z.object({
    device_ref: DeviceKey,
    user_id: z.string(),
    units: z.array(MemoryUnit),
    unit_count: count(0),
    taken_at: timestamp,
    notes: z.array(z.string()),
  }),
);

export const RestoreResult = named(
  'RestoreResult',
  z.object({ device_ref: DeviceKey, user_id: z.string(), restored: count(0), restored_at: timestamp, notes: z.array(z.string()) }),
);

const ErrorCodeSchema = named('ErrorCode', z.enum(Object.keys(errorStatus) as [ErrorCode, ...ErrorCode[]]));

const InvalidRequestDetails = named(
  'InvalidRequestDetails',
  z.object({ problems: z.array(z.object({ field: z.string(), rule: z.string() })).min(1) }),
);

const SettingsFixedDetails = named(
  'SettingsFixedDetails',
  z.object({
    fields: z.array(z.enum(['locale', 'device_ref', 'time_zone', 'run_label', 'time_offset'])).min(1),
    fixed: z.object({ ...settings, device_ref: z.string() }),
  }),
);

// Registered for openapi.yaml's Error component; errors are written by the error handler.
named(
  'Error',
  z.object({
    error: ErrorCodeSchema,
    message: z.string(),
    details: z.xor([InvalidRequestDetails, SettingsFixedDetails]).optional(),
  }),
);

export const Health = named('Health', z.object({ status: z.literal('ok') }));
export const Readiness = named('Readiness', z.object({ ready: z.boolean(), open: count(0), busy: count(0) }));

type JsonSchema = Record<string, unknown>;

const isEmpty = (value: unknown): boolean => typeof value === 'object' && value !== null && Object.keys(value).length === 0;

const options = {
  metadata: components,
  /** Written as openapi.yaml writes it: what zod adds that says nothing goes. */
  override: ({ jsonSchema }: { jsonSchema: JsonSchema }) => {
    // A loose object's "anything else" is `{}` to zod; JSON Schema's own spelling is `true`.
    if (isEmpty(jsonSchema.additionalProperties)) jsonSchema.additionalProperties = true;
    if (isEmpty(jsonSchema.properties)) delete jsonSchema.properties;
    // Integers are bounded by the safe range, timestamps by zod's own ISO pattern: their type and format say it.
    if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
    if (jsonSchema.format === 'date-time') delete jsonSchema.pattern;
    // A constant says its type itself.
    if ('const' in jsonSchema) delete jsonSchema.type;
  },
} as const;

/** The registered shapes as openapi.yaml's `components.schemas` (each refers to the others by `#/components/schemas/…`). */
export function componentSchemas(): Record<string, JsonSchema> {
  const { schemas } = z.toJSONSchema(components, { ...options, uri: (id) => `#/components/schemas/${id}` });
  return Object.fromEntries(
    Object.entries(schemas).map(([id, schema]) => {
      const { $schema: _s, $id: _i, ...rest } = collapseNullable(schema) as JsonSchema;
      return [id, rest];
    }),
  );
}

/**
 * An open object (an engine element, a memory unit) is passed on as received, so the serializer
 * writes it whole, as JSON.stringify does: field by field it would be slower and say nothing more.
 */
function serializedWhole(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(serializedWhole);
  if (typeof node !== 'object' || node === null) return node;
  if ((node as JsonSchema).additionalProperties === true) return {};
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, serializedWhole(v)]));
}

/** One shape, self-contained, for a route's `schema.response`: Fastify compiles its serializer from it. */
export function responseSchema(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, { ...options, metadata: z.globalRegistry });
  const { $schema: _, ...rest } = serializedWhole(collapseNullable(json)) as JsonSchema;
  return rest;
}
