// Writes src/api/report-shapes.ts, the TypeScript types of openapi.yaml's run and comparison report
// components (RunReport, RunStreamLine, ComparisonReport, the ConversationDecision a comparison's
// progress shows, JudgeCheckReport and every component they reference), with openapi-typescript.
// `npm run generate:types` runs it; test/report-shapes.test.ts fails when the committed file
// differs from what it writes now.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import { format, resolveConfig } from 'prettier';
import ts from 'typescript';
import { parse } from 'yaml';

const OPENAPI = new URL('../openapi.yaml', import.meta.url);
export const REPORT_SHAPES = new URL('../src/api/report-shapes.ts', import.meta.url);

/** The components the reports start from; the others they reference come with them. */
const ROOTS = ['RunReport', 'RunStreamLine', 'ComparisonReport', 'ConversationDecision', 'JudgeCheckReport'];

const HEADER = `// Generated from openapi.yaml's report components by scripts/generate-report-shapes.ts (openapi-typescript):
// do not edit. Change openapi.yaml, then run \`npm run generate:types\`.
`;

/** The report components and those they reference, in openapi.yaml's order. */
function reportSchemas(schemas: Record<string, unknown>): Record<string, unknown> {
  const wanted = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') add(value.split('/').at(-1)!);
      else visit(value);
    }
  };
  const add = (name: string): void => {
    if (wanted.has(name)) return;
    if (!(name in schemas)) throw new Error(`openapi.yaml has no component ${name}`);
    wanted.add(name);
    visit(schemas[name]);
  };
  ROOTS.forEach(add);
  return Object.fromEntries(Object.entries(schemas).filter(([name]) => wanted.has(name)));
}

/** The file's text as the generator writes it now. */
export async function generateReportShapes(): Promise<string> {
  const document = parse(readFileSync(OPENAPI, 'utf8')) as { info: unknown; components: { schemas: Record<string, unknown> } };
  // Only the components: openapi-typescript's validator does not know OpenAPI 3.2's paths (itemSchema).
  const subset = {
    openapi: '3.1.0',
    info: document.info,
    paths: {},
    components: { schemas: reportSchemas(document.components.schemas) },
  } as OpenAPI3;
  const ast = await openapiTS(subset, { exportType: true });
  // Only `components`: the subset has no paths, webhooks or operations to type.
  const components = ast.filter((node) => ts.isTypeAliasDeclaration(node) && node.name.text === 'components');
  const path = fileURLToPath(REPORT_SHAPES);
  const config = await resolveConfig(path);
  return format(HEADER + astToString(components), { ...config, filepath: path });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) writeFileSync(REPORT_SHAPES, await generateReportShapes());
