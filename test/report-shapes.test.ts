import { readFileSync } from 'node:fs';
import t from 'tap';
import { generateReportShapes, REPORT_SHAPES } from '../scripts/generate-report-shapes.js';

/**
 * The report shapes are declared once, in openapi.yaml; src/api/report-shapes.ts is their TypeScript,
 * generated. A change to openapi.yaml's report components without `npm run generate:types` fails here.
 */
t.test('src/api/report-shapes.ts is what the generator writes from openapi.yaml now', async (t) => {
  const committed = readFileSync(REPORT_SHAPES, 'utf8');
  t.equal(committed, await generateReportShapes(), 'run `npm run generate:types` and commit src/api/report-shapes.ts');
});
