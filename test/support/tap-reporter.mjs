// `npm test`'s reporter (package.json's "tap"."reporter"): one line per test file, and every failure
// in full — the failed assertion, the path of subtests to it, its diagnostics (diff, source, the
// extra an assertion carries) and the comments of the subtests it failed in — then tap's own summary
// lines, among them "# { total: N, pass: P, fail: F }", which .ci/run reads. tap pipes the runner's
// TAP into it (a stream class is how a reporter module is loaded); `npx tap -R base` is the
// interactive view, `npx tap -R tap` the raw TAP.
//
// A skipped test gets one line under its file's (a test skipped for a missing tool,
// test/support/tools.ts, has a reason starting `needs nginx (`), and the very last line counts them
// as tap counts skips (every skipped test point, at any depth), with every tool missing and the
// command that installs them; it comes after tap's summary, so "# { total … }" is still the last
// summary line.
import { Transform } from 'node:stream';

const POINT = /^( *)(not )?ok \d+( - (.*?))?( # .*)?$/;
const SUBTEST = /^( *)# Subtest: (.*)$/;
/** A test point skipped for a missing tool: its name, the tools and the reason. */
const TOOL_SKIP = /^ *ok \d+ - (.*?) # SKIP (needs ([^(]+?) \(.*?\): (.*))$/;
/** Any skipped test point: its name and reason, if it has them. */
const SKIP = /^ *ok \d+(?: - (.*?))? # SKIP\b:? ?(.*)$/;

export default class ShortReporter extends Transform {
  #partial = '';
  /** The lines of the test file being reported (from its "# Subtest:" to its own test point). */
  #file = null;
  /** After a test file's test point: whether its YAML block (at indent 2) is shown. */
  #fileYaml = null;
  /** The tools tests skipped for, how many tests, and the command that installs them. */
  #missing = new Set();
  #toolSkips = 0;
  #otherSkips = 0;
  #install = '';

  _transform(chunk, _encoding, done) {
    const lines = (this.#partial + chunk.toString()).split('\n');
    this.#partial = lines.pop();
    for (const line of lines) this.#line(line);
    done();
  }

  _flush(done) {
    if (this.#partial !== '') this.#line(this.#partial);
    if (this.#file) this.#print(this.#file);
    const tests = (n) => `${n} test${n === 1 ? '' : 's'}`;
    const needing = () => `needing ${[...this.#missing].join(', ')} (not installed here): ${this.#install}`;
    const all = this.#toolSkips + this.#otherSkips;
    if (this.#otherSkips === 0 && this.#toolSkips > 0) this.#print([`# skipped ${tests(this.#toolSkips)} ${needing()}`]);
    else if (this.#toolSkips === 0 && this.#otherSkips > 0)
      this.#print([`# skipped ${tests(all)}, for the reasons named under their files`]);
    else if (all > 0) {
      this.#print([
        `# skipped ${tests(all)}: ${this.#otherSkips} for the reasons named under their files, ${this.#toolSkips} ${needing()}`,
      ]);
    }
    done();
  }

  #print(lines) {
    for (const line of lines) this.push(`${line}\n`);
  }

  /** One line per skipped test of a file (its own test point included), counted by why. */
  #skipsOf(lines) {
    const shown = [];
    for (const line of lines) {
      const tool = TOOL_SKIP.exec(line);
      if (tool) {
        for (const name of tool[3].split(', ')) this.#missing.add(name);
        this.#toolSkips++;
        this.#install = tool[4].replace(/ installs (it|them)$/, ' installs them');
        shown.push(`    # skipped: ${tool[1]}: ${tool[2]}`);
        continue;
      }
      const skip = SKIP.exec(line);
      if (!skip) continue;
      this.#otherSkips++;
      shown.push(`    # skipped: ${skip[1] ?? 'a test'}${skip[2] ? `: ${skip[2]}` : ''}`);
    }
    return shown;
  }

  #line(line) {
    if (this.#fileYaml !== null) {
      if (line.startsWith('  ')) {
        if (this.#fileYaml) this.#print([line]);
        return;
      }
      this.#fileYaml = null;
    }
    if (this.#file) {
      const point = POINT.exec(line);
      if (point && point[1] === '') {
        if (point[2]) this.#print(['', ...failures(this.#file)]);
        this.#print([line]);
        this.#print(this.#skipsOf([...this.#file, line]));
        this.#file = null;
        this.#fileYaml = Boolean(point[2]);
        return;
      }
      this.#file.push(line);
      return;
    }
    if (SUBTEST.exec(line)?.[1] === '') {
      this.#file = [line];
      return;
    }
    if (line.trim() !== '') this.#print([line]);
  }
}

/**
 * A failed test file's lines, kept to its failures: the file's "# Subtest:" line, then per failed
 * assertion the path of subtests to it ("# subtest > … > assertion"), the comments written in
 * those subtests since their last test point, its test point and its YAML block. A subtest that
 * failed with no failed assertion shown (a plan not met) is shown the same way; a file that failed
 * without any (a crash of the process) is shown whole.
 */
function failures(lines) {
  const shown = [lines[0]];
  /** The open subtests: name, indent of their lines, comments, whether a failure in them was shown. */
  const open = [];
  let found = false;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    const subtest = SUBTEST.exec(line);
    if (subtest) {
      open.push({ name: subtest[2], indent: subtest[1].length, comments: [], shown: false });
      continue;
    }
    const point = POINT.exec(line);
    if (!point) {
      const top = open.at(-1);
      if (top && line.trimStart().startsWith('# ') && !line.trimStart().startsWith('# time=')) top.comments.push(line);
      continue;
    }
    const indent = point[1].length;
    // A test point at a subtest's own indent ends that subtest; deeper, it is an assertion in it.
    const closing = open.length > 0 && open.at(-1).indent === indent ? open.pop() : null;
    const yaml = [];
    if (lines[i + 1] === `${point[1]}  ---`) {
      let j = i + 1;
      while (j < lines.length && lines[j] !== `${point[1]}  ...`) yaml.push(lines[j++]);
      if (j < lines.length) yaml.push(lines[j]);
      i = j;
    }
    const parent = open.at(-1);
    if (point[2] && !closing?.shown) {
      const path = [...open.map((s) => s.name), closing ? closing.name : (point[4] ?? '')];
      const comments = [...open.flatMap((s) => s.comments), ...(closing ? closing.comments : [])];
      shown.push(
        `    # ${path.join(' > ')}`,
        ...comments.map((c) => `    ${c.trimStart()}`),
        `    ${line.trimStart()}`,
        ...yaml.map((y) => `    ${y.slice(indent)}`),
      );
      found = true;
    }
    if (parent) {
      if (point[2]) parent.shown = true;
      // A subtest's comments go with the failures that follow them, up to its next test point.
      parent.comments = [];
    }
  }
  return found ? shown : lines;
}
