// Preloaded into benchmarked Node processes (NODE_OPTIONS=--require): at exit, writes the process's peak RSS in KB to
// $NB_BENCH_RSS_DIR/<pid>, so the bench can read the peak of a process that is gone.
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { isMainThread } = require('node:worker_threads');

const dir = process.env.NB_BENCH_RSS_DIR;
if (dir && isMainThread) {
  process.on('exit', () => {
    try {
      writeFileSync(join(dir, String(process.pid)), String(process.resourceUsage().maxRSS));
    } catch {
      // the bench is gone; nothing to report to
    }
  });
}
