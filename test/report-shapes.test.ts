import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import t from 'tap';
import { request } from 'undici';
import { serializedComponent } from '../src/api/openapi.js';
import { reportSerializer } from '../src/routes/runs.js';
import { answerLongCall } from '../src/routes/streaming.js';
import { comparisonFixture, runFixture } from './support/report-fixtures.js';
import { generateReportShapes, REPORT_SHAPES } from '../scripts/generate-report-shapes.js';

/**
 * The report shapes are declared once, in openapi.yaml; src/api/report-shapes.ts is their TypeScript,
 * generated. A change to openapi.yaml's report components without `npm run generate:types` fails here.
 */
t.test('src/api/report-shapes.ts is what the generator writes from openapi.yaml now', async (t) => {
  const committed = readFileSync(REPORT_SHAPES, 'utf8');
  t.equal(committed, await generateReportShapes(), 'run `npm run generate:types` and commit src/api/report-shapes.ts');
});

t.test('the runs and comparisons routes write a report with the serializer compiled from its openapi.yaml component', async (t) => {
  t.equal(
    await serializedComponent('RunReport'),
    await serializedComponent('RunReport'),
    'the component is built once, so its serializer compiles once',
  );
  const reports = {
    RunReport: runFixture([{ name: 'order', outcomes: [true, false] }]),
    ComparisonReport: await comparisonFixture([{ name: 'order', baseline: [true, true], candidate: [true, false] }]),
  };
  const app = Fastify();
  app.post<{ Params: { component: keyof typeof reports } }>('/:component', async (request, reply) => {
    const { component } = request.params;
    // A field the component does not declare: the caller never sees it.
    const report = { ...reports[component], undeclared: 'x' };
    return answerLongCall(request, reply, {
      status: 200,
      finalKey: 'report',
      hangUpNote: '',
      serialize: await reportSerializer(reply, component),
      // The stream begins with the first line, as a run's first turn begins it.
      run: async ({ emit }) => {
        emit?.({ turn: {} });
        return report;
      },
    });
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => app.close());
  for (const [component, report] of Object.entries(reports)) {
    const json = await request(`${url}/${component}`, { method: 'POST' });
    t.match(json.headers['content-type'], /^application\/json/, `${component}: JSON`);
    t.same(await json.body.json(), report, `${component} as JSON: every declared field, nothing else`);
    const stream = await request(`${url}/${component}`, { method: 'POST', headers: { accept: 'application/x-ndjson' } });
    const lines = (await stream.body.text()).trim().split('\n');
    t.same(JSON.parse(lines.at(-1)!), { report }, `${component} as the last NDJSON line: the same`);
  }
});
