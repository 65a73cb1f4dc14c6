// The last commit's subject, as the anchors write theirs: at most 72 characters, no trailing
// period; the why goes in the body. Run by `npm run check`. Plain Node, no dependencies; outside
// a git checkout (a packed tarball) there is nothing to check.
import { spawnSync } from "node:child_process";

const MAX = 72;
const log = spawnSync("git", ["log", "-1", "--format=%s"], { encoding: "utf8" });
if (log.status !== 0) {
  console.log("commit: not a git checkout; nothing to check");
  process.exit(0);
}
const subject = log.stdout.trim();
const problems = [];
if (subject.length > MAX) problems.push(`is ${subject.length} characters; keep it to ${MAX} and put the why in the body`);
if (subject.endsWith(".")) problems.push("ends with a period");
if (problems.length) {
  console.error(`commit: the last commit's subject ${problems.join(", and ")}:\n  ${subject}`);
  process.exit(1);
}
console.log(`commit: the last subject is ${subject.length} characters`);
