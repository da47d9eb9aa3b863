/**
 * openapi.yaml as the tests read it, and validators for any schema in it by JSON pointer
 * (`/components/schemas/Line`, `/paths/…/responses/200/content/application~1json/schema`).
 */

import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { parse as parseYaml } from 'yaml';
import { type Json } from './http.js';
import { ROOT } from './root.js';

export const OPENAPI_FILE = `${ROOT}openapi.yaml`;

export const doc: Json = parseYaml(readFileSync(OPENAPI_FILE, 'utf8'));

const DOC_ID = 'urn:agent-test-gateway:openapi';
const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: true, allowUnionTypes: true });
addFormatsModule.default(ajv);
// The whole document is one schema resource, so `#/components/...` refs resolve inside it; its
// top-level OpenAPI fields (openapi, info, paths, …) are annotations to Ajv, never validated.
ajv.addVocabulary(Object.keys(doc));
ajv.addSchema({ ...doc, $id: DOC_ID });

/** A conversation start with every field the start request takes set, as a client in Prague would send it. */
export const FULL_START_BODY = {
  line: 'Hello',
  locale: 'de_DE',
  device_ref: 'alice',
  time_zone: 'Europe/Prague',
  run_label: 'nightly-42',
  time_offset: '-P10D',
};

export const escapePointer = (part: string): string => part.replaceAll('~', '~0').replaceAll('/', '~1');

const validators = new Map<string, ValidateFunction>();
export function validatorAt(pointer: string): ValidateFunction {
  let validate = validators.get(pointer);
  if (validate === undefined) {
    validate = ajv.compile({ $ref: `${DOC_ID}#${pointer}` });
    validators.set(pointer, validate);
  }
  return validate;
}

/** A `$ref` followed within the document (the node itself when it is none), with the pointer it named. */
export function resolveRef(node: Json): { node: Json; pointer: string | undefined } {
  if (typeof node?.$ref !== 'string') return { node, pointer: undefined };
  const pointer = String(node.$ref).replace(/^#/, '');
  let target: Json = doc;
  for (const part of pointer.split('/').slice(1)) target = target?.[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  return { node: target, pointer };
}
