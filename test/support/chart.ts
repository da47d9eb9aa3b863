/** The Helm chart read as files: no helm binary here, so its templates are read as text. */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { type Json } from './http.js';

export const chartDir = fileURLToPath(new URL('../../helm/agent-test-gateway/', import.meta.url));
export const templateText = (name: string): string => readFileSync(join(chartDir, 'templates', name), 'utf8');

/**
 * A template's YAML with its actions taken out: a line holding only actions goes, an inline
 * action becomes TEMPLATED. Both branches of an if/else stay, so keys may repeat.
 */

export function skeleton(name: string): Json {
  const lines = templateText(name)
    .split('\n')
    .filter((line) => line.replace(/\{\{.*?\}\}/g, '').trim() !== '')
    .map((line) => line.replace(/\{\{.*?\}\}/g, 'TEMPLATED'));
  return parse(lines.join('\n'), { uniqueKeys: false });
}
