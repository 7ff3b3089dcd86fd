-- Drives `mlsem lsp` from Neovim's own LSP client, headless, set up exactly as
-- docs/editors.md tells Neovim 0.7 users (nvim.test.sh extracts that block). Checks what
-- an editor user sees: the diagnostics of a file with two hand-written GELUs after
-- non-ASCII text (byte columns converted by Neovim from the server's encoding), the hover,
-- and the quick fix, applied to the buffer and re-analyzed. Writes a log; exits non-zero
-- (`cquit`) on the first failure.
local setup, file, log = os.getenv('MLSEM_NVIM_SETUP'), os.getenv('MLSEM_NVIM_FILE'), os.getenv('MLSEM_NVIM_LOG')
local scale = tonumber(os.getenv('MLSEM_TEST_TIMEOUT_SCALE') or '1')  -- sanitized builds are slower
local out = assert(io.open(log, 'w'))
local function say(fmt, ...)
  out:write(string.format(fmt, ...) .. '\n')
  out:flush()
end
local function fail(msg)
  say('FAIL: %s', msg)
  out:close()
  vim.cmd('cquit 1')
end
local function check(cond, msg)
  if not cond then fail(msg) end
end

vim.cmd('filetype on')
local ok, err = pcall(dofile, setup)
check(ok, 'the setup from docs/editors.md failed: ' .. tostring(err))
vim.cmd('edit ' .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
check(vim.bo[buf].filetype == 'python', 'filetype: ' .. vim.bo[buf].filetype)

local function gelus()
  return vim.tbl_filter(function(d)
    return d.source == 'mlsem' and d.code == 'ACT001'
  end, vim.diagnostic.get(buf))
end
check(vim.wait(30000 * scale, function() return #gelus() == 2 end, 20),
  'expected 2 ACT001 diagnostics, got ' .. vim.inspect(vim.diagnostic.get(buf)))
local client = vim.lsp.get_active_clients()[1]
check(client and client.name == 'mlsem', 'no mlsem client attached')
say('attached: %s, offset encoding %s', client.name, client.offset_encoding)

-- Both findings where the expressions are, in Neovim's byte columns (0-based).
local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
local tanh_expr = '0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))'
local erf_expr = 'h * 0.5 * (1.0 + torch.erf(h / math.sqrt(2.0)))'
local tanh_col = lines[8]:find(tanh_expr, 1, true) - 1
local erf_col = lines[12]:find(erf_expr, 1, true) - 1
local by_line = {}
for _, d in ipairs(gelus()) do by_line[d.lnum] = d end
check(by_line[7] and by_line[7].col == tanh_col and by_line[7].end_col == tanh_col + #tanh_expr,
  'tanh GELU range: ' .. vim.inspect(by_line[7]) .. ' expected col ' .. tanh_col)
check(by_line[11] and by_line[11].col == erf_col and by_line[11].end_col == erf_col + #erf_expr,
  'erf GELU range: ' .. vim.inspect(by_line[11]) .. ' expected col ' .. erf_col)
check(by_line[7].severity == vim.diagnostic.severity.WARN, 'severity ' .. tostring(by_line[7].severity))
check(by_line[7].message:match('%(confidence [01]%.%d%d%)$'), 'message: ' .. by_line[7].message)
say('diagnostics: ACT001 at 8:%d and 12:%d (byte columns after CJK text and emoji)', tanh_col + 1, erf_col + 1)

-- Hover inside the tanh GELU.
vim.api.nvim_win_set_cursor(0, { 8, tanh_col + 2 })
local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
local res = vim.lsp.buf_request_sync(buf, 'textDocument/hover', params, 10000 * scale)
local hover = res and res[client.id] and res[client.id].result
check(hover and hover.contents and hover.contents.value, 'no hover: ' .. vim.inspect(res))
for _, want in ipairs({ 'ACT001', 'Concept: GELU', 'F%.gelu', 'kernels/bias_gelu' }) do
  check(hover.contents.value:match(want), 'hover lacks ' .. want .. ': ' .. hover.contents.value)
end
say('hover: %d characters of markdown, names the rule, concept, fix and kernel', #hover.contents.value)

-- The preferred quick fix, as `vim.lsp.buf.code_action()` would ask for it: the line's
-- diagnostics converted back to LSP form (with the server's `data`).
local range = vim.lsp.util.make_range_params(0, client.offset_encoding)
range.context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(buf, 7) }
res = vim.lsp.buf_request_sync(buf, 'textDocument/codeAction', range, 10000 * scale)
local actions = res and res[client.id] and res[client.id].result or {}
local fix
for _, a in ipairs(actions) do
  if a.kind == 'quickfix' and a.isPreferred then fix = a end
end
check(fix and fix.edit, 'no preferred quick fix: ' .. vim.inspect(actions))
check(fix.title == 'Replace with F.gelu(x, approximate="tanh")', 'title: ' .. tostring(fix.title))
vim.lsp.util.apply_workspace_edit(fix.edit, client.offset_encoding)
local fixed = vim.api.nvim_buf_get_lines(buf, 7, 8, false)[1]
check(fixed == '    label = "😀 中文"; return F.gelu(x, approximate="tanh")  # 注释 🚀', 'after the fix: ' .. fixed)
say('quick fix applied: %s', fixed)

-- Neovim sends the edit as a change; the re-analysis leaves only the erf GELU.
check(vim.wait(30000 * scale, function()
  local left = gelus()
  return #left == 1 and left[1].lnum == 11
end, 20), 'after the fix, expected only the erf GELU: ' .. vim.inspect(vim.diagnostic.get(buf)))
say('re-analyzed: only the erf GELU at line 12 is left')

vim.lsp.stop_client(client.id)
check(vim.wait(10000 * scale, function() return vim.lsp.client_is_stopped(client.id) end, 20), 'the server did not stop')
say('ok')
out:close()
vim.cmd('qa!')
