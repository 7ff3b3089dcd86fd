// A real LSP client (vscode-jsonrpc) driving `mlsem lsp` over stdio, plus text helpers
// that convert positions in each encoding independently of the server.
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const rpc = require('vscode-jsonrpc/node');

// Sanitized builds run the server several times slower: CMake sets a factor for every wait.
const TIMEOUT_SCALE = Number(process.env.MLSEM_TEST_TIMEOUT_SCALE || 1);

const BIN = process.env.MLSEM_BIN || path.join(__dirname, '..', '..', 'build', 'mlsem');

// Code units of one code point in an encoding.
function units(cp, encoding) {
  if (encoding === 'utf-32') return 1;
  if (encoding === 'utf-16') return cp > 0xffff ? 2 : 1;
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

function lineStarts(text) {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') starts.push(i + 1);
  return starts;
}

// LSP position -> JS string index (JS strings are UTF-16).
function toIndex(text, pos, encoding) {
  const starts = lineStarts(text);
  if (pos.line >= starts.length) return text.length;
  let i = starts[pos.line];
  let counted = 0;
  while (i < text.length && text[i] !== '\n' && text[i] !== '\r') {
    const cp = text.codePointAt(i);
    const u = units(cp, encoding);
    if (counted + u > pos.character) break;
    counted += u;
    i += cp > 0xffff ? 2 : 1;
  }
  return i;
}

// JS string index -> LSP position.
function toPosition(text, index, encoding) {
  const starts = lineStarts(text);
  let line = 0;
  while (line + 1 < starts.length && starts[line + 1] <= index) line++;
  let character = 0;
  for (let i = starts[line]; i < index; ) {
    const cp = text.codePointAt(i);
    character += units(cp, encoding);
    i += cp > 0xffff ? 2 : 1;
  }
  return { line, character };
}

// Applies LSP TextEdits (non-overlapping) to a text.
function applyEdits(text, edits, encoding) {
  const spans = edits.map((e) => ({
    start: toIndex(text, e.range.start, encoding),
    end: toIndex(text, e.range.end, encoding),
    newText: e.newText,
  }));
  spans.sort((a, b) => b.start - a.start);
  for (const s of spans) text = text.slice(0, s.start) + s.newText + text.slice(s.end);
  return text;
}

const workspaces = [];
process.on('exit', () => workspaces.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

function tempWorkspace() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mlsem-lsp-'));
  workspaces.push(dir);
  return dir;
}

function uriOf(file) {
  return 'file://' + file.split('/').map(encodeURIComponent).join('/');
}

// A server process and a connection to it. Notifications and server-to-client
// requests are recorded; waitFor() resolves when one matches.
class Client {
  // `t`: the node:test context; the server is killed when the test ends, passed or not.
  constructor(t, args = []) {
    this.proc = spawn(BIN, ['lsp', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    t.after(() => this.proc.kill());
    this.proc.stdin.on('error', () => {});
    this.stderr = '';
    this.proc.stderr.on('data', (d) => (this.stderr += d));
    this.exit = new Promise((resolve) => this.proc.on('exit', (code) => resolve(code)));
    this.conn = rpc.createMessageConnection(
      new rpc.StreamMessageReader(this.proc.stdout),
      new rpc.StreamMessageWriter(this.proc.stdin)
    );
    this.events = []; // {method, params, request: bool}
    this.waiters = [];
    this.conn.onNotification((method, params) => this.record({ method, params, request: false }));
    this.conn.onRequest((method, params) => {
      this.record({ method, params, request: true });
      return null;
    });
    this.conn.onError(() => {});
    this.conn.listen();
  }

  record(event) {
    this.events.push(event);
    this.waiters = this.waiters.filter((w) => {
      if (!w.pred(event)) return true;
      clearTimeout(w.timer);
      w.resolve(event);
      return false;
    });
  }

  // The first event (already seen or future) matching pred; seen events from `since`.
  waitFor(pred, timeoutMs = 10000, since = 0) {
    timeoutMs *= TIMEOUT_SCALE;
    const seen = this.events.slice(since).find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const waiter = { pred, resolve };
      waiter.timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error('timed out waiting for a message; seen: ' + JSON.stringify(this.events.map((e) => e.method))));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  // The next publishDiagnostics for uri at a version.
  diagnostics(uri, version, since = 0, timeoutMs = 10000) {
    return this.waitFor(
      (e) => e.method === 'textDocument/publishDiagnostics' && e.params.uri === uri && (version === undefined || e.params.version === version),
      timeoutMs,
      since
    ).then((e) => e.params.diagnostics);
  }

  request(method, params, token) {
    return token ? this.conn.sendRequest(method, params, token) : this.conn.sendRequest(method, params);
  }
  notify(method, params) {
    return this.conn.sendNotification(method, params);
  }

  async initialize(capabilities = {}, extra = {}) {
    const result = await this.request('initialize', { processId: process.pid, rootUri: null, capabilities, ...extra });
    await this.notify('initialized', {});
    return result;
  }

  async close() {
    try {
      await this.request('shutdown', null);
      await this.notify('exit');
    } catch {
      /* already gone */
    }
    const code = await this.exit;
    this.conn.dispose();
    return code;
  }
}

// Resolves with err.code when the promise rejects, fails when it resolves.
async function errorCode(promise) {
  try {
    const result = await promise;
    throw new Error('expected an error, got ' + JSON.stringify(result));
  } catch (e) {
    if (e.code === undefined) throw e;
    return e.code;
  }
}

module.exports = { BIN, Client, applyEdits, errorCode, tempWorkspace, toIndex, toPosition, uriOf, units };
