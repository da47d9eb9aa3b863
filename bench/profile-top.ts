// Top self-time functions of a V8 .cpuprofile (`node --cpu-prof`), and self time by package.
// Usage: node --import tsx bench/profile-top.ts <file.cpuprofile> [count]
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileRow {
  name: string;
  where: string;
  selfMs: number;
  share: number;
}

export interface ProfileSummary {
  totalMs: number;
  idleMs: number;
  busyMs: number;
  top: ProfileRow[];
  byArea: ProfileRow[];
}

const shortUrl = (url: string): string => {
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const dist = url.lastIndexOf('/dist/');
  if (dist >= 0) return url.slice(dist + 1);
  return url.replace(/^file:\/\//, '');
};

/** Where the time went: the gateway's own code, a dependency, Node's internals, or V8/GC. */
function areaOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (url === '') {
    if (functionName === '(garbage collector)') return '(garbage collector)';
    if (functionName === '(program)' || functionName === '(idle)') return functionName;
    return '(native / V8 builtins)';
  }
  if (url.startsWith('node:')) return 'node: internals';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.includes('/dist/') || url.includes('/src/')) return 'gateway (dist/)';
  return 'other';
}

/**
 * `windows`: only samples taken within these [start, end] intervals, in µs of the monotonic clock
 * (the clock of the profile's timestamps, and of process.hrtime in the process that ran the load).
 */
export function summarizeProfile(profile: CpuProfile, count = 25, windows?: Array<[number, number]>): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (windows !== undefined && !windows.some(([from, to]) => at >= from && at <= to)) continue;
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
  }
  const byFunction = new Map<string, ProfileRow>();
  const byArea = new Map<string, ProfileRow>();
  let totalUs = 0;
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame;
    totalUs += us;
    if (frame.functionName === '(idle)') idleUs += us;
    const where = frame.url === '' ? '' : `${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
    const name = frame.functionName || '(anonymous)';
    const key = `${name}\n${where}`;
    const row = byFunction.get(key) ?? { name, where, selfMs: 0, share: 0 };
    row.selfMs += us / 1000;
    byFunction.set(key, row);
    const area = areaOf(frame);
    const arow = byArea.get(area) ?? { name: area, where: '', selfMs: 0, share: 0 };
    arow.selfMs += us / 1000;
    byArea.set(area, arow);
  }
  const busyMs = (totalUs - idleUs) / 1000;
  const rank = (rows: Iterable<ProfileRow>) =>
    [...rows]
      .filter((r) => r.name !== '(idle)')
      .map((r) => ({ ...r, share: busyMs > 0 ? r.selfMs / busyMs : 0 }))
      .sort((a, b) => b.selfMs - a.selfMs);
  return {
    totalMs: totalUs / 1000,
    idleMs: idleUs / 1000,
    busyMs,
    top: rank(byFunction.values()).slice(0, count),
    byArea: rank(byArea.values()),
  };
}

export function formatProfile(summary: ProfileSummary): string {
  const pct = (x: number) => `${(x * 100).toFixed(1).padStart(5)}%`;
  const lines = [
    `profile: ${(summary.totalMs / 1000).toFixed(1)} s sampled, ${(summary.busyMs / 1000).toFixed(1)} s busy (not idle)`,
    'self time by area (share of busy time):',
    ...summary.byArea.map((r) => `  ${pct(r.share)} ${r.selfMs.toFixed(0).padStart(7)} ms  ${r.name}`),
    'top functions by self time:',
    ...summary.top.map((r) => `  ${pct(r.share)} ${r.selfMs.toFixed(0).padStart(7)} ms  ${r.name}  ${r.where}`),
  ];
  return lines.join('\n');
}

export function readProfile(path: string): CpuProfile {
  return JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const file = process.argv[2];
  if (file === undefined) {
    process.stderr.write('usage: node --import tsx bench/profile-top.ts <file.cpuprofile> [count]\n');
    process.exit(2);
  }
  process.stdout.write(`${formatProfile(summarizeProfile(readProfile(file), Number(process.argv[3] ?? 30)))}\n`);
}
