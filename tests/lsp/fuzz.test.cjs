// Fuzz test of `mlsem lsp`: thousands of random, malformed and truncated messages
// over raw stdio (a seeded generator, so every run sends the same bytes). The server
// must answer every request exactly once, answer probes throughout, and still shut
// down cleanly. Run by ctest: node --test tests/lsp/fuzz.test.cjs
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const { BIN } = require('./client.cjs');

// Sanitized builds run the server several times slower: CMake sets a factor for every wait.
const TIMEOUT_SCALE = Number(process.env.MLSEM_TEST_TIMEOUT_SCALE || 1);

const MESSAGES = Number(process.env.MLSEM_FUZZ_MESSAGES || 6000);
const SEED = Number(process.env.MLSEM_FUZZ_SEED || 20261123);

function mulberry32(seed) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// A raw connection: frames out, frames in, responses by id.
class Raw {
  constructor(args = []) {
    this.proc = spawn(BIN, ['lsp', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.exit = new Promise((resolve) => this.proc.on('exit', (code) => resolve(code)));
    this.proc.stdin.on('error', () => {});
    this.buffer = Buffer.alloc(0);
    this.messages = [];
    this.waiters = [];
    this.proc.stdout.on('data', (d) => this.feed(d));
    // Read the server's stderr (its log, sanitizer reports): a pipe nobody reads fills up
    // at 64 KB and then blocks the server's next write, a hang that is the test's own.
    this.stderr = '';
    this.proc.stderr.on('data', (d) => (this.stderr = (this.stderr + d).slice(-65536)));
  }
  // What the server's stderr says: a sanitizer report from its first line (its stack
  // names the cause; the end only says where the thread was made), else the last lines.
  report() {
    const at = this.stderr.indexOf('ERROR: ');
    return at >= 0 ? 'the server reported: ' + this.stderr.slice(Math.max(0, at - 100), at + 6000)
      : 'the end of its stderr: ' + this.stderr.slice(-4000);
  }
  feed(data) {
    this.buffer = Buffer.concat([this.buffer, data]);
    while (true) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const header = this.buffer.subarray(0, end).toString();
      const m = /^Content-Length: (\d+)$/.exec(header);
      assert.ok(m, 'the server writes well-formed headers: ' + header);
      const length = Number(m[1]);
      if (this.buffer.length < end + 4 + length) return;
      const body = JSON.parse(this.buffer.subarray(end + 4, end + 4 + length).toString());
      this.buffer = this.buffer.subarray(end + 4 + length);
      assert.equal(body.jsonrpc, '2.0');
      this.messages.push(body);
      this.waiters = this.waiters.filter((w) => (w.pred(body) ? (w.resolve(body), false) : true));
    }
  }
  write(bytes) {
    this.proc.stdin.write(bytes);
  }
  send(obj) {
    const body = Buffer.from(JSON.stringify(obj));
    this.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]));
  }
  waitFor(pred, timeoutMs = 20000) {
    timeoutMs *= TIMEOUT_SCALE;
    const seen = this.messages.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no answer in time; ' + this.report())), timeoutMs);
      this.waiters.push({ pred, resolve: (m) => (clearTimeout(timer), resolve(m)) });
    });
  }
  response(id, timeoutMs = 60000) {
    return this.waitFor((m) => m.id === id && !('method' in m), timeoutMs);
  }
}

const METHODS = ['textDocument/didOpen', 'textDocument/didChange', 'textDocument/didClose', 'textDocument/didSave',
  'textDocument/hover', 'textDocument/codeAction', 'textDocument/diagnostic', 'workspace/diagnostic',
  'workspace/didChangeWatchedFiles', '$/cancelRequest', 'initialize', 'initialized', 'mlsem/unknown', '$/setTrace'];
const PIECES = ['def f(x):\n', '    return 0.5 * x * (1.0 + torch.tanh(', '0.044715', ' * x ** 3', ')))\n', 'import torch\n',
  '# 中文注释\n', '"😀"', 'é', '\r\n', '\t', '\\', '\u0000', 'q @ k.transpose(-2, -1)', 'softmax(', '\n', ' ', '(', ']'];

function generator(random) {
  const int = (n) => Math.floor(random() * n);
  const pick = (xs) => xs[int(xs.length)];
  const uris = ['file:///w/a.py', 'file:///w/b.py', 'file:///w/c.cu', 'untitled:1', 'file:///w/%E4%B8%AD.py', 'x'];
  const text = () => Array.from({ length: int(12) }, () => pick(PIECES)).join('');
  const position = () => (random() < 0.1 ? pick([null, 'x', { line: -1 }, {}]) : { line: int(12), character: int(random() < 0.9 ? 80 : 1e9) });
  const range = () => ({ start: position(), end: position() });
  const junk = () => pick([null, 0, -1, 1.5, 'x', true, [], {}, [1, 2], { a: { b: [] } }]);
  const params = (method) => {
    if (random() < 0.08) return junk();
    const textDocument = { uri: random() < 0.95 ? pick(uris) : junk(), version: int(100), languageId: pick(['python', 'cuda', 'markdown']), text: text() };
    switch (method) {
      case 'textDocument/didOpen': return { textDocument };
      case 'textDocument/didChange':
        return { textDocument, contentChanges: Array.from({ length: int(3) }, () => (random() < 0.7 ? { range: range(), text: text() } : { text: text() })) };
      case 'textDocument/hover': return { textDocument, position: position() };
      case 'textDocument/codeAction': return { textDocument, range: range(), context: { diagnostics: [], only: random() < 0.3 ? ['source.fixAll'] : undefined } };
      case 'textDocument/diagnostic': return { textDocument, previousResultId: pick([undefined, '1', '2', 7]) };
      case 'workspace/diagnostic': return { previousResultIds: random() < 0.8 ? [] : [{ uri: pick(uris), value: '3' }] };
      case 'workspace/didChangeWatchedFiles': return { changes: [{ uri: 'file:///w/mlsem.toml', type: 2 }] };
      case '$/cancelRequest': return { id: pick([int(50), 'q-' + int(50), null]) };
      default: return { textDocument };
    }
  };
  let next = 0;
  // One fuzz message: bytes to write, and the id of a request that must be answered.
  return () => {
    const kind = random();
    if (kind < 0.55) {
      const method = pick(METHODS);
      const isRequest = random() < 0.5;
      const id = isRequest ? 'q-' + next++ : undefined;
      const msg = { jsonrpc: '2.0', method, params: params(method) };
      if (id) msg.id = id;
      const body = Buffer.from(JSON.stringify(msg));
      return { bytes: frame(body), id };
    }
    if (kind < 0.7) {  // truncated JSON: always a parse error
      const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 'never', method: 'textDocument/hover', params: params('textDocument/hover') }));
      return { bytes: frame(body.subarray(0, int(body.length - 1))), parseError: true };
    }
    if (kind < 0.8) {  // random bytes, often invalid UTF-8
      return { bytes: frame(Buffer.from(Array.from({ length: int(64) }, () => int(256)))) };
    }
    if (kind < 0.9) {  // valid JSON, invalid JSON-RPC
      const body = pick([[], 1, '"x"', { id: 'z' }, { jsonrpc: '1.0', id: 'v1', method: 'x' }, { jsonrpc: '2.0', id: { a: 1 }, method: 'x' },
        { jsonrpc: '2.0', method: 7, id: 2 }, { jsonrpc: '2.0', id: 3, result: null }, [{ jsonrpc: '2.0', id: 4, method: 'x' }]]);
      return { bytes: frame(Buffer.from(typeof body === 'string' ? body : JSON.stringify(body))) };
    }
    // Broken headers, skipped by the server (the next message still gets through).
    return { bytes: Buffer.from(pick(['Content-Length: abc\r\n\r\n', 'Content-Length: -5\r\n\r\n', 'X-Nothing: 1\r\n\r\n',
      'garbage line\r\n\r\n', 'Content-Length: 99999999999999999999\r\n\r\n', '\r\n', 'Content-Type: x\r\n\r\n'])) };
  };
}

function frame(body) {
  return Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]);
}

test(`the server survives ${MESSAGES} random and malformed messages (seed ${SEED})`, async (t) => {
  const s = new Raw();
  t.after(() => s.proc.kill());
  s.send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { capabilities: { general: { positionEncodings: ['utf-32'] } }, rootUri: null } });
  assert.equal((await s.response('init')).result.capabilities.positionEncoding, 'utf-32');
  s.send({ jsonrpc: '2.0', method: 'initialized', params: {} });
  const next = generator(mulberry32(SEED));
  const ids = [];
  let truncated = 0;
  for (let i = 0; i < MESSAGES; i++) {
    const m = next();
    s.write(m.bytes);
    if (m.id) ids.push(m.id);
    if (m.parseError) truncated++;
    if (i % 200 === 199) {  // the server keeps answering while it is fed garbage
      const probe = 'probe-' + i;
      s.send({ jsonrpc: '2.0', id: probe, method: 'mlsem/probe' });
      assert.equal((await s.response(probe)).error.code, -32601);
    }
  }
  s.send({ jsonrpc: '2.0', id: 'bye', method: 'shutdown' });
  assert.equal((await s.response('bye')).result, null);
  // Requests that wait for an analysis (of a .cu file, say: seconds the first time, while
  // Clang builds the CUDA headers' preamble) may be answered after the shutdown's reply.
  for (const id of ids) await s.response(id).catch(() => {});
  for (const id of ids) {
    const answers = s.messages.filter((m) => m.id === id && !('method' in m));
    assert.equal(answers.length, 1, `request ${id} answered once`);
  }
  const parseErrors = s.messages.filter((m) => m.error && m.error.code === -32700);
  assert.ok(parseErrors.length >= truncated, `${parseErrors.length} parse errors for ${truncated} truncated messages`);
  assert.ok(parseErrors.every((m) => m.id === null));
  const codes = {};
  for (const m of s.messages) {
    const key = m.error ? String(m.error.code) : 'method' in m ? m.method : 'result';
    codes[key] = (codes[key] || 0) + 1;
  }
  t.diagnostic(`${ids.length} requests, ${truncated} truncated; server messages: ${JSON.stringify(codes)}`);
  s.send({ jsonrpc: '2.0', method: 'exit' });
  assert.equal(await s.exit, 0);
});

test('a message cut short by the end of input: the server exits (1) without hanging', async (t) => {
  const s = new Raw();
  t.after(() => s.proc.kill());
  s.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { capabilities: {} } });
  await s.response(1);
  s.write('Content-Length: 100\r\n\r\n{"jsonrpc": "2.0", "id": 2, ');
  s.proc.stdin.end();
  assert.equal(await s.exit, 1);
});
