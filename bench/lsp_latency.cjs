// Editor latency of `mlsem lsp`: the time from a textDocument/didChange to the
// textDocument/publishDiagnostics for that version, on a 2,000-line model file.
// A benchmark, not a test: it prints figures and fails only when the server does.
//
//   node bench/lsp_latency.cjs [--edits N] [--file FILE] [--bin build/mlsem]
//
// Without --file the document is the Python samples (samples/python/*.py, real model
// code: GPT, Llama, ViT, T5, UNet, ...) concatenated and cut to 2,000 lines.
// Two kinds of edit are timed: an isolated keystroke (the editor then waits for
// diagnostics) and the last keystroke of a burst typed 30 ms apart (the server
// waits out its debounce before analyzing). Target: isolated edits under 50 ms.
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const rpc = require('vscode-jsonrpc/node');

const root = path.join(__dirname, '..');
const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const EDITS = Number(option('--edits', 60));
const BIN = option('--bin', process.env.MLSEM_BIN || path.join(root, 'build', 'mlsem'));
const LINES = 2000;

function document() {
  const file = option('--file', null);
  if (file) return fs.readFileSync(file, 'utf8');
  const dir = path.join(root, 'samples', 'python');
  let lines = [];
  for (const name of fs.readdirSync(dir).sort()) {
    if (!name.endsWith('.py')) continue;
    lines = lines.concat(fs.readFileSync(path.join(dir, name), 'utf8').split('\n'));
    if (lines.length >= LINES) break;
  }
  // Cut at a top-level statement so the file stays valid Python.
  let cut = Math.min(LINES, lines.length);
  while (cut > 0 && /^\s/.test(lines[cut] || '')) cut--;
  const text = lines.slice(0, cut);
  while (text.length < LINES) text.push('');
  return text.join('\n') + '\n';
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ms = (ns) => Number(ns) / 1e6;
function stats(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return `median ${q(0.5).toFixed(1)} ms, p90 ${q(0.9).toFixed(1)} ms, min ${s[0].toFixed(1)} ms, max ${s[s.length - 1].toFixed(1)} ms (${s.length} edits)`;
}

async function main() {
  const text = document();
  const proc = spawn(BIN, ['lsp'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const conn = rpc.createMessageConnection(new rpc.StreamMessageReader(proc.stdout), new rpc.StreamMessageWriter(proc.stdin));
  const published = new Map(); // version -> {time, count}
  let wake = null;
  conn.onNotification('textDocument/publishDiagnostics', (p) => {
    published.set(p.version, { time: process.hrtime.bigint(), count: p.diagnostics.length });
    if (wake) wake();
  });
  // The server's own account of each analysis ($/logTrace, with trace on).
  const analysis = [], cpu = [], fixes = [], parse = [];
  let incremental = 0;
  conn.onNotification('$/logTrace', (p) => {
    const m = /analysis ([\d.]+) ms \(cpu ([\d.]+) ms\), diagnostics ([\d.]+) ms/.exec(p.message);
    if (m) analysis.push(Number(m[1])), cpu.push(Number(m[2])), fixes.push(Number(m[3]));
    // The reparse inside the analysis (servers that reuse the tree say so).
    const r = /parse ([\d.]+) ms \((incremental|full)\)/.exec(p.message);
    if (r) parse.push(Number(r[1])), (incremental += r[2] === 'incremental');
  });
  conn.onRequest(() => null);
  conn.listen();
  const waitVersion = async (v) => {
    while (!published.has(v)) await new Promise((r) => (wake = r));
    return published.get(v);
  };

  await conn.sendRequest('initialize', { processId: process.pid, rootUri: null, capabilities: {}, trace: 'messages' });
  await conn.sendNotification('initialized', {});
  const uri = 'file://' + path.join(os.tmpdir(), 'mlsem-bench-model.py');
  const lineCount = text.split('\n').length - 1;
  let version = 1;
  let sent = process.hrtime.bigint();
  await conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version, text } });
  const open = await waitVersion(version);
  console.log(`document: ${lineCount} lines, ${Buffer.byteLength(text)} bytes, ${open.count} diagnostics`);
  console.log(`didOpen -> diagnostics: ${ms(open.time - sent).toFixed(1)} ms`);

  // Type a character into a line, then delete it, spread over the file.
  const edit = (i) => {
    const line = Math.floor((i * 7919) % lineCount);
    return i % 2 === 0
      ? { range: { start: { line, character: 0 }, end: { line, character: 0 } }, text: ' ' }
      : { range: { start: { line: Math.floor(((i - 1) * 7919) % lineCount), character: 0 }, end: { line: Math.floor(((i - 1) * 7919) % lineCount), character: 1 } }, text: '' };
  };
  const isolated = [];
  analysis.length = cpu.length = fixes.length = parse.length = 0;
  incremental = 0;
  for (let i = 0; i < EDITS; i++) {
    await sleep(150); // longer than the debounce: an isolated change
    version++;
    sent = process.hrtime.bigint();
    await conn.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [edit(i)] });
    isolated.push(ms((await waitVersion(version)).time - sent));
  }
  const isolatedAnalysis = analysis.slice(0, EDITS), isolatedCpu = cpu.slice(0, EDITS), isolatedFixes = fixes.slice(0, EDITS);
  const isolatedParse = parse.slice(0, EDITS), isolatedIncremental = incremental;
  const burst = [];
  for (let b = 0; b < Math.max(4, EDITS / 10); b++) {
    await sleep(300);
    for (let k = 0; k < 6; k++) {
      version++;
      sent = process.hrtime.bigint();
      await conn.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [edit(2 * k)] });
      if (k < 5) await sleep(30);
    }
    await conn.sendNotification('textDocument/didChange', { textDocument: { uri, version: ++version }, contentChanges: [{ text }] });
    sent = process.hrtime.bigint();
    burst.push(ms((await waitVersion(version)).time - sent));
  }
  console.log(`didChange -> publishDiagnostics, isolated edit: ${stats(isolated)}; target < 50 ms`);
  console.log(`  inside the server: analysis ${stats(isolatedAnalysis)}`);
  console.log(`  analysis CPU time (the analysis thread's own): ${stats(isolatedCpu)}`);
  console.log(`  findings to LSP diagnostics: ${stats(isolatedFixes)}`);
  if (isolatedParse.length)
    console.log(`  reparse (wall, part of the analysis): ${stats(isolatedParse)}; ${isolatedIncremental} of ${isolatedParse.length} reused the edited tree`);
  console.log(`machine: ${os.cpus().length} x ${os.cpus()[0].model}, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  console.log(`didChange -> publishDiagnostics, last edit of a burst (debounce 100 ms): ${stats(burst)}`);
  await conn.sendRequest('shutdown', null);
  await conn.sendNotification('exit');
  const code = await new Promise((r) => proc.on('exit', r));
  conn.dispose();
  process.exit(code);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
