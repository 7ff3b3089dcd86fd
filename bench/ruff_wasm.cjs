// The peer for bench/run.sh: Ruff's WebAssembly build for Node
// (@astral-sh/ruff-wasm-nodejs, pinned in bench/ruff/package.json) lints every file of a
// list with its default settings (Workspace.defaultSettings(): 407 rules in 0.17.3).
//
//   node bench/ruff_wasm.cjs FILE_LIST
//
// Files are read into memory first and the WebAssembly module is compiled before the
// clock starts; only the checks are timed, wall time and the process's CPU time. One
// thread (WebAssembly on Node runs on the main thread). Output is one line:
//   files=1446 bytes=18745369 seconds=3.912 cpu_seconds=3.900 diagnostics=... ruff=0.17.3
'use strict';
const fs = require('fs');
const path = require('path');
const ruff = require(path.join(__dirname, 'ruff', 'node_modules', '@astral-sh', 'ruff-wasm-nodejs'));

const list = process.argv[2];
if (!list) {
  process.stderr.write('usage: node bench/ruff_wasm.cjs FILE_LIST\n');
  process.exit(2);
}
const paths = fs.readFileSync(list, 'utf8').split('\n').filter((line) => line.length > 0);
const texts = paths.map((p) => fs.readFileSync(p, 'utf8'));
const bytes = paths.reduce((sum, p) => sum + fs.statSync(p).size, 0);

const workspace = new ruff.Workspace(ruff.Workspace.defaultSettings(), ruff.PositionEncoding.Utf8);
workspace.check('x = 1\n'); // warm the module up outside the clock

const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
let diagnostics = 0;
for (const text of texts) diagnostics += workspace.check(text).length;
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = process.cpuUsage(cpu0);
const cpuSeconds = (cpu.user + cpu.system) / 1e6;
console.log(`files=${texts.length} bytes=${bytes} seconds=${seconds.toFixed(3)} ` +
            `cpu_seconds=${cpuSeconds.toFixed(3)} diagnostics=${diagnostics} ruff=${ruff.Workspace.version()}`);
