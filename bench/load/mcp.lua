-- wrk script of bench/run.sh: real MCP requests over Streamable HTTP, every answer checked.
--
-- Environment (set by run.sh):
--   BENCH_OP       read | page | create
--   BENCH_URI      the resource read by `read` (cursos://<uuid>)
--   BENCH_KEY      the Bearer key (empty: no Authorization header)
--   BENCH_SESSION  an Mcp-Session-Id (empty: none, stateless)
--   BENCH_SESSIONS space-separated Mcp-Session-Ids, one per wrk thread (overrides BENCH_SESSION):
--                  with as many threads as connections, one session per connection
--   BENCH_TAG      unique per wrk run: `create` titles are "<tag> t<thread> <n>", unique per request
--   BENCH_PROTOCOL MCP-Protocol-Version header (default 2025-11-25)
-- An answer is bad when its status is not 200, or its body has no "result", or holds a JSON-RPC
-- "error" or a tool result with "isError":true. done() prints one JSON line with the figures.

local op = os.getenv("BENCH_OP") or "read"
local uri = os.getenv("BENCH_URI") or "cursos://catalogo"
local key = os.getenv("BENCH_KEY") or ""
local session = os.getenv("BENCH_SESSION") or ""
local sessions = {}
for id in (os.getenv("BENCH_SESSIONS") or ""):gmatch("%S+") do table.insert(sessions, id) end
local tag = os.getenv("BENCH_TAG") or "bench"
local protocol = os.getenv("BENCH_PROTOCOL") or "2025-11-25"

local threads = {}
local next_thread = 0

function setup(thread)
  next_thread = next_thread + 1
  thread:set("thread_number", next_thread)
  if #sessions > 0 then
    if next_thread > #sessions then error("BENCH_SESSIONS has fewer sessions than wrk has threads") end
    thread:set("thread_session", sessions[next_thread])
  end
  table.insert(threads, thread)
end

local headers = {
  ["Content-Type"] = "application/json",
  ["Accept"] = "application/json, text/event-stream",
  ["MCP-Protocol-Version"] = protocol,
}
if key ~= "" then headers["Authorization"] = "Bearer " .. key end

local counter = 0
local fixed_request = nil
bad = 0
first_bad = ""

function init(args)
  -- thread_session is set by setup() before init runs, in this thread's own Lua state.
  if thread_session ~= nil then session = thread_session end
  if session ~= "" then headers["Mcp-Session-Id"] = session end
  if op == "read" then
    fixed_request = wrk.format("POST", nil, headers,
      '{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"' .. uri .. '"}}')
  elseif op == "page" then
    fixed_request = wrk.format("POST", nil, headers,
      '{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"cursos://catalogo"}}')
  end
end

function request()
  if fixed_request ~= nil then return fixed_request end
  counter = counter + 1
  local body = string.format(
    '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"criar_curso","arguments":{"titulo":"%s t%d %d","cargaHoraria":%d}}}',
    counter, tag, thread_number, counter, 1 + counter % 1000)
  return wrk.format("POST", nil, headers, body)
end

function response(status, _, body)
  if status ~= 200 or not body:find('"result"', 1, true) or body:find('"error":', 1, true)
      or body:find('"isError":true', 1, true) then
    bad = bad + 1
    if first_bad == "" then first_bad = status .. " " .. body:sub(1, 300) end
  end
end

function done(summary, latency, _)
  local total_bad, sample = 0, ""
  for _, thread in ipairs(threads) do
    total_bad = total_bad + thread:get("bad")
    if sample == "" then sample = thread:get("first_bad") end
  end
  local errors = summary.errors
  io.write(string.format(
    '{"requests":%d,"seconds":%.3f,"rps":%.1f,"p50_ms":%.3f,"p90_ms":%.3f,"p99_ms":%.3f,"max_ms":%.3f,' ..
    '"non2xx":%d,"bad":%d,"socket_errors":%d,"timeouts":%d,"first_bad":"%s"}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    errors.status, total_bad, errors.connect + errors.read + errors.write, errors.timeout,
    (sample:gsub('[%c"\\]', ' '))))
end
