#!/usr/bin/env node
'use strict';
/*
 * Runs a command on Node.js 24 or newer, whatever Node the machine has:
 *
 *   node scripts/node24.cjs node dist/server.js     node scripts/node24.cjs tap test/config.test.ts
 *   node scripts/node24.cjs --own-group node dist/server.js   (the command in a process group of its own; every
 *                                                             signal reaches it through this launcher, once)
 *
 * The npm scripts that run the gateway or its tests go through it (package.json). On Node ≥ 24 it
 * runs the command as it is; on an older Node it installs Node 24 from the npm registry once per machine, into
 * ~/.cache/agent-test-gateway/node-24 (scripts/node-version.cjs says where exactly, and how to move it), and runs the
 * command, and every process it starts, on that Node. The exit status is the command's.
 * CommonJS and plain syntax on purpose: this file runs on the old Node.
 */
const MAJOR = 24;
require('./node-version.cjs').run(MAJOR, true, process.argv.slice(2));
