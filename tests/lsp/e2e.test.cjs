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

const REPO = path.join(__dirname, '..', '..');

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
    // The rule's page in the repository's docs/rules/, which exists for the link to work.
    assert.equal(tanh.codeDescription.href, 'https://github.com/mlsem/mlsem/blob/main/docs/rules/ACT001.md');
    assert.ok(fs.existsSync(path.join(REPO, 'docs', 'rules', 'ACT001.md')));
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

test('diagnostics follow an edited torch pin', async (t) => {
  // ACT001's fix (F.gelu(approximate='tanh')) needs torch 1.12: off where the project pins
  // an older one. The server keeps the pins it has read, and forgets them when a
  // requirements file changes (watched) or is saved.
  const root = tempWorkspace();
  fs.mkdirSync(path.join(root, '.git'));
  const requirements = path.join(root, 'requirements.txt');
  fs.writeFileSync(requirements, 'torch==1.8.0\n');
  const uri = uriOf(path.join(root, 'model.py'));
  const c = new Client(t);
  await c.initialize(capabilitiesFor('utf-16'), { rootUri: uriOf(root) });
  await c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: SOURCE } });
  assert.deepEqual(await c.diagnostics(uri, 1), []);
  // The log says why the rules are silent, once per change of the note.
  const notes = (since) => c.events.slice(since).filter((e) => e.method === 'window/logMessage' && e.params.message.includes(': note: '));
  assert.equal(notes(0).length, 1, JSON.stringify(c.events.map((e) => e.method)));
  assert.match(notes(0)[0].params.message, /model\.py: note: 1 file targets torch 1\.8(\.0)? \(.*\): .*ACT001.* need a newer torch/);
  fs.writeFileSync(requirements, 'torch==2.4.0\n');
  const seen = c.events.length;
  await c.notify('workspace/didChangeWatchedFiles', { changes: [{ uri: uriOf(requirements), type: 2 }] });
  assert.equal((await c.diagnostics(uri, 1, seen)).length, 2);
  assert.ok(notes(seen).every((e) => !e.params.message.includes('ACT001')), JSON.stringify(notes(seen)));
  fs.writeFileSync(requirements, 'torch==1.10.2\n');
  const seen2 = c.events.length;
  await c.notify('textDocument/didSave', { textDocument: { uri: uriOf(requirements) } });
  assert.deepEqual(await c.diagnostics(uri, 1, seen2), []);
  assert.equal(notes(seen2).length, 1);
  assert.match(notes(seen2)[0].params.message, /torch 1\.10/);
  // Without a pin file, the README's statement decides (the README of a directory with
  // Python in it: the open document saved there).
  fs.rmSync(requirements);
  fs.writeFileSync(path.join(root, 'model.py'), SOURCE);
  const readme = path.join(root, 'README.md');
  fs.writeFileSync(readme, '# Model\n\nRequires PyTorch 2.1 or later.\n');
  const seen3 = c.events.length;
  await c.notify('workspace/didChangeWatchedFiles', { changes: [{ uri: uriOf(requirements), type: 3 }, { uri: uriOf(readme), type: 1 }] });
  assert.equal((await c.diagnostics(uri, 1, seen3)).length, 2);
  fs.writeFileSync(readme, '# Model\n\nTested on PyTorch 1.10.\n');
  const seen4 = c.events.length;
  await c.notify('workspace/didChangeWatchedFiles', { changes: [{ uri: uriOf(readme), type: 2 }] });
  assert.deepEqual(await c.diagnostics(uri, 1, seen4), []);
  assert.equal(await c.close(), 0);
});

test('a document closed while its analysis waits out the debounce: the worker does not read it again', async (t) => {
  // The worker waits until the document's due time; a configuration change with no
  // document open wakes it without new work, and it must not read the closed
  // document's deadline (a use after free that AddressSanitizer reports; the sanitized
  // build runs this test).
  const root = tempWorkspace();
  const uri = uriOf(path.join(root, 'model.py'));
  const c = new Client(t, ['--debounce', '2000']);
  await c.initialize(capabilitiesFor('utf-16'), { rootUri: uriOf(root) });
  // A server that dies here says why on stderr (AddressSanitizer's report).
  const died = (e) => assert.fail(`${e.message}; the end of the server's stderr:\n${c.stderr.slice(-3000)}`);
  const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  try {
    for (let round = 0; round < 3; round++) {
      await c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: SOURCE } });
      await c.diagnostics(uri, 1);
      // Two changes in a row: typing, so the analysis waits 2 s.
      for (const version of [2, 3])
        await c.notify('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [{ text: SOURCE + '\n'.repeat(version) }] });
      // Pauses let the worker settle into its wait before each next message.
      await pause(200);
      await c.notify('textDocument/didClose', { textDocument: { uri } });
      await pause(200);
      await c.notify('workspace/didChangeWatchedFiles', { changes: [{ uri: uriOf(path.join(root, 'mlsem.toml')), type: 2 }] });
    }
    // Past the deadline the worker wakes again; the server still answers.
    await pause(2500);
    assert.equal(await errorCode(c.request('mlsem/probe', {})), -32601);
  } catch (e) {
    died(e);
  }
  assert.equal(await c.close(), 0, c.stderr);
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

test('codeDescription.href: every rule links its page in docs/rules/, under a base the client may set', async (t) => {
  const sample = fs.readFileSync(path.join(REPO, 'samples', 'python', 'gpt_nanogpt.py'), 'utf8');
  const c = new Client(t);
  await c.initialize(capabilitiesFor('utf-16'));
  const uri = uriOf(path.join(tempWorkspace(), 'gpt.py'));
  await c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: sample } });
  const diags = await c.diagnostics(uri, 1);
  assert.ok(diags.length >= 2, JSON.stringify(diags.map((d) => d.code)));
  for (const d of diags) {
    const m = /^https:\/\/github\.com\/mlsem\/mlsem\/blob\/main\/(docs\/rules\/([A-Z]+\d{3})\.md)$/.exec(d.codeDescription.href);
    assert.ok(m, d.codeDescription.href);
    assert.equal(m[2], d.code);
    const page = fs.readFileSync(path.join(REPO, m[1]), 'utf8');
    assert.ok(page.startsWith(`# ${d.code} `), `${m[1]} is the page of ${d.code}`);
  }
  assert.equal(await c.close(), 0);

  // A mirror or a pinned release: the initialization option docsBaseUrl.
  const d = new Client(t);
  await d.initialize(capabilitiesFor('utf-16'), { initializationOptions: { docsBaseUrl: 'https://docs.example.org/mlsem/v0.1' } });
  await d.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: sample } });
  const gelu = (await d.diagnostics(uri, 1)).find((x) => x.code === 'ACT001');
  assert.equal(gelu.codeDescription.href, 'https://docs.example.org/mlsem/v0.1/ACT001.md');
  const hover = await d.request('textDocument/hover', { textDocument: { uri }, position: gelu.range.start });
  assert.ok(hover.contents.value.includes('(https://docs.example.org/mlsem/v0.1/ACT001.md)'), hover.contents.value);
  assert.equal(await d.close(), 0);
});

// A tiny deterministic PRNG (mulberry32), so a failure replays.
function prng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

test('incremental re-analysis: the reparsed tree gives the diagnostics a fresh parse gives, edit after edit', async (t) => {
  const models = ['gpt_nanogpt.py', 'llama.py'].map((n) => fs.readFileSync(path.join(REPO, 'samples', 'python', n), 'utf8'));
  let text = models.join('\n\n') + '\n# 中文 😀 é\n';
  const dir = tempWorkspace();
  const uri = uriOf(path.join(dir, 'edited.py'));
  const encoding = 'utf-16';
  const c = new Client(t);
  // vscode-jsonrpc keeps $/logTrace from the catch-all handler: record it explicitly.
  c.conn.onNotification('$/logTrace', (params) => c.record({ method: '$/logTrace', params, request: false }));
  await c.initialize(capabilitiesFor(encoding), { trace: 'messages' });
  await c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text } });
  const initial = await c.diagnostics(uri, 1);
  assert.ok(initial.length >= 3, 'the models have findings');
  const rand = prng(11);
  // Edits an editor makes: typing, deleting, pasting a line, joining lines, non-ASCII text;
  // some land inside findings (the GELU constant, the attention scale) and change them.
  const snippets = [' ', 'x', '\n', '    ', '0.5 * ', '(', ')', 'é', '😀', '\n        y = 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))\n', ''];
  let version = 1;
  let compared = 0, changedDiagnostics = 0;
  let previous = JSON.stringify(initial);
  for (let step = 0; step < 40; step++) {
    const at = Math.floor(rand() * text.length);
    const len = rand() < 0.5 ? 0 : Math.floor(rand() * 12);
    let start = at, end = Math.min(text.length, at + len);
    if (text.charCodeAt(start) >= 0xdc00 && text.charCodeAt(start) < 0xe000) start--; // not inside a surrogate pair
    if (text.charCodeAt(end) >= 0xdc00 && text.charCodeAt(end) < 0xe000) end++;
    const insert = snippets[Math.floor(rand() * snippets.length)];
    const range = { start: toPosition(text, start, encoding), end: toPosition(text, end, encoding) };
    text = text.slice(0, start) + insert + text.slice(end);
    const seen = c.events.length;
    await c.notify('textDocument/didChange', { textDocument: { uri, version: ++version }, contentChanges: [{ range, text: insert }] });
    const diags = await c.diagnostics(uri, version, seen);
    if (JSON.stringify(diags) !== previous) changedDiagnostics++;
    previous = JSON.stringify(diags);
    const trace = c.events.slice(seen).find((e) => e.method === '$/logTrace' && e.params.message.includes('edited.py'));
    assert.match(trace.params.message, /parse [\d.]+ ms \(incremental\)/, 'the edited tree was reused');
    if (step % 8 === 7 || step === 39) {
      // The same text opened fresh (parsed from scratch) must get the same diagnostics.
      const fresh = uriOf(path.join(dir, `fresh${step}.py`));
      await c.notify('textDocument/didOpen', { textDocument: { uri: fresh, languageId: 'python', version: 1, text } });
      const expected = await c.diagnostics(fresh, 1);
      const strip = (ds) => JSON.stringify(ds).split(fresh).join('URI').split(uri).join('URI');
      assert.equal(strip(diags), strip(expected), `after edit ${step + 1}`);
      await c.notify('textDocument/didClose', { textDocument: { uri: fresh } });
      compared++;
    }
  }
  assert.equal(compared, 5);
  assert.ok(changedDiagnostics >= 3, `the edits changed the findings (${changedDiagnostics} times)`);
  // A full-text change drops the tree: the next analysis parses from scratch.
  const seen = c.events.length;
  await c.notify('textDocument/didChange', { textDocument: { uri, version: ++version }, contentChanges: [{ text: models[0] }] });
  await c.diagnostics(uri, version, seen);
  const trace = c.events.slice(seen).find((e) => e.method === '$/logTrace' && e.params.message.includes('edited.py'));
  assert.match(trace.params.message, /\(full\)/);
  assert.equal(await c.close(), 0);
});

// Hand-written norms and attention, each in one expression (exact rewrites), and the
// same computations spread over statements or with more in them (no rewrite).
const REWRITES = [
  'import math',
  'import torch',
  'import torch.nn as nn',
  'import torch.nn.functional as fn',
  '',
  '',
  'class Norms(nn.Module):',
  '    def __init__(self, d):',
  '        super().__init__()',
  '        self.weight = nn.Parameter(torch.ones(d))',
  '        self.bias = nn.Parameter(torch.zeros(d))',
  '        self.eps = 1e-5',
  '',
  '    def rms(self, x):',
  '        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)',
  '',
  '    def layer(self, x):',
  '        return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + self.eps) * self.weight + self.bias',
  '',
  '    def llama_rms(self, hidden):',
  '        dtype = hidden.dtype',
  '        hidden = hidden.to(torch.float32)',
  '        variance = hidden.pow(2).mean(-1, keepdim=True)',
  '        hidden = hidden * torch.rsqrt(variance + self.eps)',
  '        return self.weight * hidden.to(dtype)',
  '',
  '',
  'def attention(q, k, v):',
  '    return fn.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1) @ v',
  '',
  '',
  'def masked_attention(q, k, v, mask):',
  '    return fn.softmax((q @ k.transpose(-2, -1)).masked_fill(mask == 0, float("-inf")) / math.sqrt(q.size(-1)), dim=-1) @ v',
  '',
].join('\n');
const RMS_EXPR = 'x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)';
const LN_EXPR = '(x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + self.eps) * self.weight + self.bias';
const ATT_EXPR = 'fn.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1) @ v';

test('quick fixes from the engine\'s exact rewrites: RMSNorm, LayerNorm and attention, applied and re-analyzed', async (t) => {
  const c = new Client(t);
  await c.initialize(capabilitiesFor('utf-16'));
  const uri = uriOf(path.join(tempWorkspace(), 'norms.py'));
  await c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: REWRITES } });
  const diags = await c.diagnostics(uri, 1);
  const byLine = (line, code) => diags.find((d) => d.range.start.line === line && d.code === code);
  const cases = [
    { line: 14, code: 'NRM002', expr: RMS_EXPR, replacement: 'fn.rms_norm(x, (x.shape[-1],), eps=self.eps)' },
    { line: 17, code: 'NRM001', expr: LN_EXPR, replacement: 'torch.addcmul(self.bias, fn.layer_norm(x, (x.shape[-1],), eps=self.eps), self.weight)' },
    { line: 28, code: 'ATT001', expr: ATT_EXPR, replacement: 'fn.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(q.size(-1)))' },
  ];
  let text = REWRITES;
  const all = [];
  for (const k of cases) {
    const d = byLine(k.line, k.code);
    assert.ok(d, `${k.code} on line ${k.line + 1}: ` + JSON.stringify(diags.map((x) => [x.code, x.range.start.line])));
    const actions = await c.request('textDocument/codeAction', { textDocument: { uri }, range: d.range, context: { diagnostics: [d] } });
    const fix = actions.find((a) => a.kind === 'quickfix' && a.isPreferred);
    assert.ok(fix, `a rewrite for ${k.code}: ` + JSON.stringify(actions.map((a) => a.title)));
    assert.ok(fix.title.startsWith('Replace with '), fix.title);
    const edits = fix.edit.changes[uri];
    assert.equal(edits.length, 1);
    // It replaces exactly the hand-written expression, with the file's name for F.
    assert.deepEqual(edits[0].range, rangeOf(REWRITES, k.expr, 'utf-16'));
    assert.equal(edits[0].newText, k.replacement);
    assert.ok(actions.some((a) => a.title.startsWith(`Ignore ${k.code}`)), 'the suppression is still offered');
    all.push(edits[0]);
  }
  // No rewrite where the computation spans statements (Llama's RMSNorm rebinds `hidden`)
  // or holds more than the library call computes (a mask).
  for (const [line, code] of [[23, 'NRM002'], [32, 'ATT001']]) {
    const d = diags.find((x) => x.code === code && x.range.start.line <= line && x.range.end.line >= line);
    assert.ok(d, `${code} is reported around line ${line + 1}`);
    const actions = await c.request('textDocument/codeAction', { textDocument: { uri }, range: d.range, context: { diagnostics: [d] } });
    const mine = actions.filter((a) => a.kind === 'quickfix' && a.diagnostics[0].code === code && a.diagnostics[0].range.start.line === d.range.start.line);
    assert.ok(mine.some((a) => a.title.startsWith('Ignore')), 'the suppression is offered');
    assert.deepEqual(mine.filter((a) => a.isPreferred).map((a) => a.title), [], `no rewrite for ${code} at line ${line + 1}`);
  }

  // fixAll applies the three at once; the result has none of these findings left.
  const fixAll = await c.request('textDocument/codeAction', {
    textDocument: { uri }, range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, context: { diagnostics: [], only: ['source.fixAll'] },
  });
  assert.equal(fixAll.length, 1);
  assert.deepEqual(fixAll[0].edit.changes[uri].map((e) => e.newText).sort(), all.map((e) => e.newText).sort());
  text = applyEdits(text, fixAll[0].edit.changes[uri], 'utf-16');
  for (const k of cases) assert.ok(text.includes(k.replacement), text);
  await c.notify('textDocument/didChange', { textDocument: { uri, version: 2 }, contentChanges: [{ text }] });
  const after = await c.diagnostics(uri, 2);
  for (const k of cases)
    assert.equal(after.filter((d) => d.code === k.code && d.range.start.line === k.line).length, 0, `${k.code} fixed: ` + JSON.stringify(after));
  assert.equal(await c.close(), 0);
});

test('no rewrite in a file that does not import torch, nor for a value the rewrite would evaluate fewer times', async (t) => {
  const c = new Client(t);
  await c.initialize(capabilitiesFor('utf-16'));
  const noImport = REWRITES.replace('import torch.nn.functional as fn\n', '').replace('import torch\n', '').replace('import torch.nn as nn\n', '');
  const uri = uriOf(path.join(tempWorkspace(), 'noimport.py'));
  await c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: noImport } });
  const diags = await c.diagnostics(uri, 1);
  for (const d of diags) {
    const actions = await c.request('textDocument/codeAction', { textDocument: { uri }, range: d.range, context: { diagnostics: [d] } });
    assert.deepEqual(actions.filter((a) => a.title.startsWith('Replace')).map((a) => a.title), [], `${d.code}: no import of torch`);
  }
  // x computed by a call in the RMSNorm: the rewrite would call it once, not twice.
  const twice = REWRITES.replace(RMS_EXPR, 'self.proj(x) * torch.rsqrt(self.proj(x).pow(2).mean(-1, keepdim=True) + self.eps)');
  const uri2 = uriOf(path.join(tempWorkspace(), 'twice.py'));
  await c.notify('textDocument/didOpen', { textDocument: { uri: uri2, languageId: 'python', version: 1, text: twice } });
  const d2 = (await c.diagnostics(uri2, 1)).filter((d) => d.code === 'NRM002' && d.range.start.line === 14);
  for (const d of d2) {
    const actions = await c.request('textDocument/codeAction', { textDocument: { uri: uri2 }, range: d.range, context: { diagnostics: [d] } });
    assert.deepEqual(actions.filter((a) => a.title.startsWith('Replace')).map((a) => a.title), []);
  }
  assert.equal(await c.close(), 0);
});

// TRN001 (a preview rule, selected by name in the workspace's pyproject.toml): zero_grad(set_to_none=False)
// is rewritten to zero_grad() where the file reads no .grad, and only reported where it does.
const ZERO_GRAD = [
  'import torch',
  'import torch.nn.functional as F',
  '',
  '',
  'def train(model, loader, optimizer):',
  '    for x, y in loader:',
  '        optimizer.zero_grad(set_to_none=False)',
  '        F.cross_entropy(model(x), y).backward()',
  '        optimizer.step()',
  '',
].join('\n');

test('zero_grad(set_to_none=False): the quick fix writes zero_grad(), re-analysis drops the finding; none where .grad is read', async (t) => {
  const root = tempWorkspace();
  // min-confidence 0.3: where .grad is read the finding falls below the default 0.5.
  fs.writeFileSync(path.join(root, 'pyproject.toml'), '[tool.mlsem]\nselect = ["TRN001"]\nmin-confidence = 0.3\n');
  const c = new Client(t);
  await c.initialize(capabilitiesFor('utf-16'), { rootUri: uriOf(root) });
  const uri = uriOf(path.join(root, 'train.py'));
  await c.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text: ZERO_GRAD } });
  const diags = await c.diagnostics(uri, 1);
  const d = diags.find((x) => x.code === 'TRN001');
  assert.ok(d, JSON.stringify(diags));
  assert.equal(d.range.start.line, 6);
  const actions = await c.request('textDocument/codeAction', { textDocument: { uri }, range: d.range, context: { diagnostics: [d] } });
  const fix = actions.find((a) => a.kind === 'quickfix' && a.isPreferred);
  assert.ok(fix, JSON.stringify(actions.map((a) => a.title)));
  const edits = fix.edit.changes[uri];
  assert.equal(edits.length, 1);
  assert.deepEqual(edits[0].range, rangeOf(ZERO_GRAD, 'optimizer.zero_grad(set_to_none=False)', 'utf-16'));
  assert.equal(edits[0].newText, 'optimizer.zero_grad()');
  const text = applyEdits(ZERO_GRAD, edits, 'utf-16');
  await c.notify('textDocument/didChange', { textDocument: { uri, version: 2 }, contentChanges: [{ text }] });
  assert.deepEqual((await c.diagnostics(uri, 2)).filter((x) => x.code === 'TRN001'), []);

  // The same loop clipping p.grad by hand: reported, no rewrite.
  const reads = ZERO_GRAD.replace('        optimizer.step()', '        for p in model.parameters():\n            p.grad.clamp_(-1, 1)\n        optimizer.step()');
  const uri2 = uriOf(path.join(root, 'clip.py'));
  await c.notify('textDocument/didOpen', { textDocument: { uri: uri2, languageId: 'python', version: 1, text: reads } });
  const d2 = (await c.diagnostics(uri2, 1)).find((x) => x.code === 'TRN001');
  assert.ok(d2, 'still reported where .grad is read');
  const actions2 = await c.request('textDocument/codeAction', { textDocument: { uri: uri2 }, range: d2.range, context: { diagnostics: [d2] } });
  assert.deepEqual(actions2.filter((a) => a.title.startsWith('Replace')).map((a) => a.title), []);
  assert.equal(await c.close(), 0);
});
