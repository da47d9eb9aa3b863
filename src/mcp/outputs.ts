import { z } from 'zod';
import { openApiComponent } from '../api/openapi.js';
import { portable } from './tools.js';

/**
 * The run_suite, compare_revisions and check_judge tools answer the runs, comparisons and
 * judge-checks routes' reports, whose one declaration is openapi.yaml's RunReport, ComparisonReport
 * and JudgeCheckReport: zod reads them
 * (`z.fromJSONSchema`) and the SDK validates every answer with them; tools/list shows them in the
 * portable spelling of the input schemas. (The other tools' output schemas are the REST shapes of
 * src/api/responses.ts.) The MCP server loads on the first /mcp request, and these with it.
 */
async function outputOf(name: string): Promise<z.ZodObject> {
  const json = await openApiComponent(name);
  return (z.fromJSONSchema(json) as z.ZodObject).meta(portable(json) as Record<string, unknown>);
}

export const runReportOutput = await outputOf('RunReport');
export const comparisonReportOutput = await outputOf('ComparisonReport');
export const runViewOutput = await outputOf('Run');
export const judgeCheckOutput = await outputOf('JudgeCheckReport');
export const comparisonPlanOutput = await outputOf('ComparisonPlan');
