// End-to-end tests of `mlsem lsp` with a real LSP client (vscode-jsonrpc) over stdio:
// lifecycle, the three position encodings on non-ASCII text, edits, hover, code
// actions applied and re-analyzed, pushed and pulled diagnostics, configuration
// changes, cancellation. Run by ctest: node --test tests/lsp/e2e.test.cjs
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Client, applyEdits, errorCode, tempWorkspace, toPosition, uriOf } = require('./client.cjs');

// Two hand-written GELUs, each after non-ASCII text on its own line: a CJK comment and
// emoji (astral, two UTF-16 units, four UTF-8 bytes) in strings.
const GELU_LINE = '    label = "😀 中文"; return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))  # 注释 🚀';
const SOURCE = [
  'import math',
  'import torch',
  'import torch.nn.functional as F',
  '',
  '',
  'def gelu_tanh(x):',
  '    # 激活函数：手写的 GELU 😀',
  GELU_LINE,
  '',
  '',
  'def gelu_erf(h):',
  '    s = "é"; return h * 0.5 * (1.0 + torch.erf(h / math.sqrt(2.0)))',
  '',
].join('\n');
const TANH_EXPR = '0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))';
const ERF_EXPR = 'h * 0.5 * (1.0 + torch.erf(h / math.sqrt(2.0)))';

// Where an expression is, as an LSP range in an encoding, computed from the text alone.
function rangeOf(text, expr, encoding) {
  const at = text.indexOf(expr);
  assert.ok(at >= 0, 'expression not in text: ' + expr);
  return { start: toPosition(text, at, encoding), end: toPosition(text, at + expr.length, encoding) };
}

function capabilitiesFor(encoding, { pull = false } = {}) {
  const caps = { textDocument: { publishDiagnostics: { versionSupport: true }, hover: {}, codeAction: {} } };
  if (encoding !== 'utf-16') caps.general = { positionEncodings: [encoding] };
  if (pull) {
    caps.textDocument.diagnostic = { dynamicRegistration: false };
    caps.workspace = { diagnostics: { refreshSupport: true }, didChangeWatchedFiles: { dynamicRegistration: true } };
  }
  return caps;
}

test('lifecycle: not initialized, unknown methods, shutdown then exit gives 0', async (t) => {
  const c = new Client(t);
  assert.equal(await errorCode(c.request('textDocument/hover', { textDocument: { uri: 'file:///x.py' }, position: { line: 0, character: 0 } })), -32002);
  const init = await c.initialize({});
  assert.equal(init.capabilities.positionEncoding, 'utf-16');
  assert.equal(init.serverInfo.name, 'mlsem');
  assert.equal(init.capabilities.diagnosticProvider, undefined, 'push client gets no pull provider');
  assert.equal(await errorCode(c.request('initialize', { processId: null, rootUri: null, capabilities: {} })), -32600);
  assert.equal(await errorCode(c.request('mlsem/noSuchMethod', {})), -32601);
  await c.notify('mlsem/noSuchNotification', {});
  assert.equal(await errorCode(c.request('textDocument/hover', { textDocument: {} })), -32602, 'bad params');
  assert.equal(await c.request('shutdown', null), null);
  assert.equal(await errorCode(c.request('textDocument/hover', { textDocument: { uri: 'file:///x.py' }, position: { line: 0, character: 0 } })), -32600);
  await c.notify('exit');
  assert.equal(await c.exit, 0);
});

test('lifecycle: exit without shutdown gives 1, and so does the end of input', async (t) => {
  const a = new Client(t);
  await a.initialize({});
  await a.notify('exit');
  assert.equal(await a.exit, 1);
  const b = new Client(t);
  await b.initialize({});
  b.proc.stdin.end();
  assert.equal(await b.exit, 1);
});

for (const encoding of ['utf-8', 'utf-16', 'utf-32']) {
  test(`push diagnostics, hover and quick fixes in ${encoding} on non-ASCII text`, async (t) => {
    const c = new Client(t);
    const init = await c.initialize(capabilitiesFor(encoding));
    assert.equal(init.capabilities.positionEncoding, encoding);
    const uri = uriOf(path.join(tempWorkspace(), 'gelu.py'));
    let text = SOURCE;
    await c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text } });
    let diags = await c.diagnostics(uri, 1);
    const gelus = diags.filter((d) => d.code === 'ACT001');
    assert.equal(gelus.length, 2, JSON.stringify(diags));
    const tanh = gelus.find((d) => d.range.start.line === 7);
    const erf = gelus.find((d) => d.range.start.line === 11);
    assert.deepEqual(tanh.range, rangeOf(text, TANH_EXPR, encoding));
    assert.deepEqual(erf.range, rangeOf(text, ERF_EXPR, encoding));
    assert.equal(tanh.source, 'mlsem');
    assert.equal(tanh.severity, 2);
    assert.match(tanh.message, /\(confidence 0\.\d\d\)$|\(confidence 1\.00\)$/);
    assert.match(tanh.codeDescription.href, /^https:\/\/.*\/rules\/python\/ACT001-gelu-by-formula\.toml$/);
    const constant = tanh.relatedInformation.find((r) => /0\.044715/.test(r.message));
    assert.deepEqual(constant.location.range, rangeOf(text, '0.044715', encoding));
    assert.equal(tanh.data.rule, 'ACT001');

    // Hover inside the finding (after the emoji), and outside any finding.
    const inside = { line: 7, character: tanh.range.start.character + 2 };
    const hover = await c.request('textDocument/hover', { textDocument: { uri }, position: inside });
    assert.match(hover.contents.value, /ACT001/);
    assert.match(hover.contents.value, /Concept: GELU/);
    assert.match(hover.contents.value, /found: the tanh-GELU constant 0\.044715/);
    assert.match(hover.contents.value, /F\.gelu/);
    assert.match(hover.contents.value, /kernels\/bias_gelu/);
    assert.match(hover.contents.value, /Next step/);
    assert.deepEqual(hover.range, tanh.range);
    const before = { line: 7, character: tanh.range.start.character - 3 };
    assert.equal(await c.request('textDocument/hover', { textDocument: { uri }, position: before }), null);

    // The quick fix, applied by the client and sent back as an incremental change.
    const actions = await c.request('textDocument/codeAction', {
      textDocument: { uri }, range: { start: inside, end: inside }, context: { diagnostics: [tanh] },
    });
    const fix = actions.find((a) => a.kind === 'quickfix' && a.isPreferred);
    assert.equal(fix.title, 'Replace with F.gelu(x, approximate="tanh")');
    const edits = fix.edit.changes[uri];
    assert.deepEqual(edits, [{ range: tanh.range, newText: 'F.gelu(x, approximate="tanh")' }]);
    text = applyEdits(text, edits, encoding);
    assert.ok(text.includes('label = "😀 中文"; return F.gelu(x, approximate="tanh")  # 注释 🚀'), text);
    await c.notify('textDocument/didChange', { textDocument: { uri, version: 2 }, contentChanges: edits.map((e) => ({ range: e.range, text: e.newText })) });
    diags = await c.diagnostics(uri, 2);
    assert.deepEqual(diags.map((d) => d.range.start.line), [11], 'only the erf GELU is left');
    assert.deepEqual(diags[0].range, rangeOf(text, ERF_EXPR, encoding));

    // "Ignore this rule here" on the erf one, applied and re-analyzed.
    const erfAt = diags[0].range.start;
    const actions2 = await c.request('textDocument/codeAction', {
      textDocument: { uri }, range: { start: erfAt, end: erfAt }, context: { diagnostics: diags },
    });
    const rewrite = actions2.find((a) => a.isPreferred);
    assert.equal(rewrite.title, 'Replace with F.gelu(h, approximate="none")');
    const ignore = actions2.find((a) => a.title.startsWith('Ignore ACT001'));
    const ignored = applyEdits(text, ignore.edit.changes[uri], encoding);
    assert.ok(ignored.includes('torch.erf(h / math.sqrt(2.0)))  # mlsem: ignore[ACT001]\n'), ignored);
    // Sent as a full-text change this time.
    await c.notify('textDocument/didChange', { textDocument: { uri, version: 3 }, contentChanges: [{ text: ignored }] });
    assert.deepEqual(await c.diagnostics(uri, 3), []);

    // An incremental edit inside the non-ASCII line: the finding comes back, then a
    // typo in the constant (an edit after the emoji) removes it again.
    await c.notify('textDocument/didChange', { textDocument: { uri, version: 4 }, contentChanges: [{ text: SOURCE }] });
    assert.equal((await c.diagnostics(uri, 4)).length, 2);
    const constantRange = rangeOf(SOURCE, '0.044715', encoding);
    await c.notify('textDocument/didChange', { textDocument: { uri, version: 5 }, contentChanges: [{ range: constantRange, text: '0.5' }] });
    diags = await c.diagnostics(uri, 5);
    assert.deepEqual(diags.map((d) => d.range.start.line), [11]);

    const closedAt = c.events.length;
    await c.notify('textDocument/didClose', { textDocument: { uri } });
    assert.deepEqual(await c.diagnostics(uri, undefined, closedAt), []);
    assert.equal(await c.close(), 0);
  });
}

test('pull diagnostics: resultId, unchanged reports, workspace diagnostics, refresh on a config change', async (t) => {
  const root = tempWorkspace();
  const file = path.join(root, 'model.py');
  const uri = uriOf(file);
  const c = new Client(t);
  const init = await c.initialize(capabilitiesFor('utf-16', { pull: true }), { rootUri: uriOf(root) });
  assert.equal(init.capabilities.diagnosticProvider.workspaceDiagnostics, true);
  await c.waitFor((e) => e.method === 'client/registerCapability');
  await c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: SOURCE } });
  const first = await c.request('textDocument/diagnostic', { textDocument: { uri } });
  assert.equal(first.kind, 'full');
  assert.equal(first.items.filter((d) => d.code === 'ACT001').length, 2);
  assert.ok(first.resultId);
  const again = await c.request('textDocument/diagnostic', { textDocument: { uri }, previousResultId: first.resultId });
  assert.deepEqual(again, { kind: 'unchanged', resultId: first.resultId });

  // An edit that changes no diagnostic (a trailing comment on the last line) keeps the id.
  const last = SOURCE.split('\n').length - 1;
  await c.notify('textDocument/didChange', { textDocument: { uri, version: 2 }, contentChanges: [{ range: { start: { line: last, character: 0 }, end: { line: last, character: 0 } }, text: '# end\n' }] });
  assert.equal((await c.request('textDocument/diagnostic', { textDocument: { uri }, previousResultId: first.resultId })).kind, 'unchanged');
  // One that does changes it.
  await c.notify('textDocument/didChange', { textDocument: { uri, version: 3 }, contentChanges: [{ range: rangeOf(SOURCE, '0.044715', 'utf-16'), text: '0.5' }] });
  const changed = await c.request('textDocument/diagnostic', { textDocument: { uri }, previousResultId: first.resultId });
  assert.equal(changed.kind, 'full');
  assert.notEqual(changed.resultId, first.resultId);
  assert.equal(changed.items.length, 1);

  const ws = await c.request('workspace/diagnostic', { previousResultIds: [{ uri, value: changed.resultId }] });
  assert.deepEqual(ws.items, [{ kind: 'unchanged', resultId: changed.resultId, uri, version: 3 }]);
  const wsFull = await c.request('workspace/diagnostic', { previousResultIds: [] });
  assert.equal(wsFull.items[0].kind, 'full');
  assert.equal(wsFull.items[0].items.length, 1);
  assert.equal(c.events.filter((e) => e.method === 'textDocument/publishDiagnostics').length, 0, 'a pull client gets no pushes');

  // mlsem.toml ignores ACT001: the server asks the client to pull again, and the pull is empty.
  fs.writeFileSync(path.join(root, 'mlsem.toml'), 'ignore = ["ACT001"]\n');
  const seen = c.events.length;
  await c.notify('workspace/didChangeWatchedFiles', { changes: [{ uri: uriOf(path.join(root, 'mlsem.toml')), type: 1 }] });
  await c.waitFor((e) => e.method === 'workspace/diagnostic/refresh', 5000, seen);
  assert.deepEqual((await c.request('textDocument/diagnostic', { textDocument: { uri } })).items, []);
  assert.equal(await c.close(), 0);
});

test('push diagnostics are re-published when pyproject.toml changes', async (t) => {
  const root = tempWorkspace();
  const uri = uriOf(path.join(root, 'model.py'));
  const c = new Client(t);
  await c.initialize(capabilitiesFor('utf-16'), { rootUri: uriOf(root) });
  await c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 7, text: SOURCE } });
  assert.equal((await c.diagnostics(uri, 7)).length, 2);
  fs.writeFileSync(path.join(root, 'pyproject.toml'), '[project]\nname = "m"\n\n[tool.mlsem]\nselect = ["ATT"]\n');
  const seen = c.events.length;
  await c.notify('workspace/didChangeWatchedFiles', { changes: [{ uri: uriOf(path.join(root, 'pyproject.toml')), type: 2 }] });
  assert.deepEqual(await c.diagnostics(uri, 7, seen), []);
  // A bad configuration is reported to the user, not fatal.
  fs.writeFileSync(path.join(root, 'pyproject.toml'), '[tool.mlsem]\nselect = ["NOPE999"]\n');
  const seen2 = c.events.length;
  await c.notify('workspace/didChangeWatchedFiles', { changes: [{ uri: uriOf(path.join(root, 'pyproject.toml')), type: 2 }] });
  const warning = await c.waitFor((e) => e.method === 'window/showMessage' && /NOPE999/.test(e.params.message), 5000, seen2);
  assert.equal(warning.params.type, 2);
  assert.match(warning.params.message, /pyproject\.toml:2:/, 'names the file and line');
  assert.equal(await c.close(), 0);
});

test('each document gets its nearest configuration, as mlsem analyze applies it', async (t) => {
  const root = tempWorkspace();
  fs.mkdirSync(path.join(root, 'sub'));
  fs.writeFileSync(path.join(root, 'mlsem.toml'), '[per-file-ignores]\n"skip_*.py" = ["ACT001"]\n');
  fs.writeFileSync(path.join(root, 'sub', 'mlsem.toml'), '[severity]\nACT001 = "error"\n');
  const top = uriOf(path.join(root, 'model.py'));
  const skipped = uriOf(path.join(root, 'skip_me.py'));
  const nested = uriOf(path.join(root, 'sub', 'model.py'));
  const c = new Client(t);
  await c.initialize(capabilitiesFor('utf-16'), { rootUri: uriOf(root) });
  for (const uri of [top, skipped, nested])
    await c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: SOURCE } });
  const atTop = await c.diagnostics(top, 1);
  assert.equal(atTop.length, 2);
  assert.ok(atTop.every((d) => d.severity !== 1), 'the root configuration does not raise the severity');
  assert.deepEqual(await c.diagnostics(skipped, 1), [], 'per-file-ignores of the root configuration');
  const inSub = await c.diagnostics(nested, 1);
  assert.equal(inSub.length, 2, 'the nearest configuration wins: no per-file-ignores, no inherited keys');
  assert.ok(inSub.every((d) => d.severity === 1), 'severity override from sub/mlsem.toml');
  assert.equal(await c.close(), 0);
});

test('$/cancelRequest answers a pending request with -32800; others are still answered', async (t) => {
  const c = new Client(t);
  await c.initialize(capabilitiesFor('utf-16'), { initializationOptions: { debounceMs: 1500 } });
  const uri = uriOf(path.join(tempWorkspace(), 'gelu.py'));
  await c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: SOURCE } });
  await c.diagnostics(uri, 1);
  // Two changes in a row are typing: the analysis waits 1.5 s, and so does a hover.
  await c.notify('textDocument/didChange', { textDocument: { uri, version: 2 }, contentChanges: [{ text: SOURCE + '\n' }] });
  await c.notify('textDocument/didChange', { textDocument: { uri, version: 3 }, contentChanges: [{ text: SOURCE + '\n\n' }] });
  const source = new (require('vscode-jsonrpc').CancellationTokenSource)();
  const started = Date.now();
  const cancelled = c.request('textDocument/hover', { textDocument: { uri }, position: { line: 7, character: 60 } }, source.token);
  const kept = c.request('textDocument/hover', { textDocument: { uri }, position: { line: 7, character: 60 } });
  source.cancel();
  assert.equal(await errorCode(cancelled), -32800);
  assert.ok(Date.now() - started < 1000, 'the cancellation is answered before the analysis');
  const hover = await kept;
  assert.match(hover.contents.value, /ACT001/);
  assert.ok((await c.diagnostics(uri, 3)).length === 2);
  assert.equal(await c.close(), 0);
});

test('fixAll applies every safe rewrite; a document in a language mlsem does not read gets none', async (t) => {
  const c = new Client(t);
  await c.initialize(capabilitiesFor('utf-16'));
  const uri = uriOf(path.join(tempWorkspace(), 'gelu.py'));
  await c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: SOURCE } });
  await c.diagnostics(uri, 1);
  const actions = await c.request('textDocument/codeAction', {
    textDocument: { uri }, range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, context: { diagnostics: [], only: ['source.fixAll'] },
  });
  assert.equal(actions.length, 1);
  assert.equal(actions[0].kind, 'source.fixAll.mlsem');
  const fixed = applyEdits(SOURCE, actions[0].edit.changes[uri], 'utf-16');
  assert.ok(fixed.includes('return F.gelu(x, approximate="tanh")'));
  assert.ok(fixed.includes('return F.gelu(h, approximate="none")'));
  await c.notify('textDocument/didChange', { textDocument: { uri, version: 2 }, contentChanges: [{ text: fixed }] });
  assert.deepEqual(await c.diagnostics(uri, 2), []);

  const md = uriOf(path.join(tempWorkspace(), 'notes.md'));
  await c.notify('textDocument/didOpen', { textDocument: { uri: md, languageId: 'markdown', version: 1, text: '# 0.5 * x\n' } });
  assert.deepEqual(await c.diagnostics(md, 1), []);
  assert.equal(await c.close(), 0);
});

test('CUDA: diagnostics and the // suppression comment in a .cu file', { skip: process.env.MLSEM_TEST_CUDA !== '1' }, async (t) => {
  const sample = fs.readFileSync(path.join(__dirname, '..', '..', 'samples', 'cuda', 'softmax_naive.cu'), 'utf8');
  const c = new Client(t);
  await c.initialize(capabilitiesFor('utf-8'));
  const uri = uriOf(path.join(tempWorkspace(), 'softmax.cu'));
  await c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'cuda-cpp', version: 1, text: sample } });
  // The first CUDA file can take seconds: Clang builds the toolkit headers' preamble.
  const diags = await c.diagnostics(uri, 1, 0, 120000);
  assert.ok(diags.length > 0, 'the sample has findings');
  const d = diags[0];
  const actions = await c.request('textDocument/codeAction', { textDocument: { uri }, range: d.range, context: { diagnostics: [d] } });
  const ignore = actions.find((a) => a.title.startsWith('Ignore ' + d.code));
  assert.match(ignore.edit.changes[uri][0].newText, new RegExp('// mlsem: ignore\\[' + d.code + '\\]|, ' + d.code));
  const text = applyEdits(sample, ignore.edit.changes[uri], 'utf-8');
  await c.notify('textDocument/didChange', { textDocument: { uri, version: 2 }, contentChanges: [{ text }] });
  const after = await c.diagnostics(uri, 2, 0, 120000);
  assert.equal(after.filter((x) => x.code === d.code && x.range.start.line === d.range.start.line).length, 0);
  assert.equal(await c.close(), 0);
});
