-- wrk script for bench/run: sends prepared requests, each exactly once, partitioned per wrk thread.
--
-- usage: wrk -t T -c C -d D -s feed.lua URL -- PREFIX KIND METHOD PATH BODY_BYTES WRAP
--   PREFIX      files PREFIX-<thread>.tsv (KIND assert: keyId TAB challenge TAB assertion, base64)
--               or PREFIX-<thread>.jsonl (KIND attest: one POST <prefix>/attest JSON body per line),
--               written by `attestctl bench-prepare`; thread t reads only its own file (wrk runs one
--               Lua state per thread, so partitions never overlap).
--   METHOD PATH the request line (must match what the assertions were minted over).
--   BODY_BYTES  body of that many "x" bytes (assert kind; the assertions bind its SHA-256).
--   WRAP        1: start again at the first request when the file is used up (only for peers that do
--               not check evidence); 0: a used-up thread keeps re-sending its last request (refused by
--               the gateway, so the run fails loudly) and reports that it ran out.
-- done() prints one line `BENCH_JSON {...}` with the totals, the errors, the latency percentiles and
-- how many prepared requests each thread used.

local threads = {}
local next_id = 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

function init(args)
  local prefix, kind = args[1], args[2]
  local method, path = args[3], args[4]
  local body_bytes = tonumber(args[5]) or 0
  wrap = args[6] == "1"
  body = nil
  if body_bytes > 0 and kind ~= "attest" then body = string.rep("x", body_bytes) end
  requests = {}
  if kind == "attest" then
    local headers = { ["Content-Type"] = "application/json" }
    for line in io.lines(prefix .. "-" .. id .. ".jsonl") do
      requests[#requests + 1] = wrk.format(method, path, headers, line)
    end
  else
    -- Built by hand (wrk.format would drop a Content-Length without a body): with a body, only the
    -- head is kept and request() appends the one shared body.
    local host = wrk.headers["Host"]
    local extra = ""
    if body then
      extra = "Content-Type: application/octet-stream\r\nContent-Length: " .. body_bytes .. "\r\n"
    end
    for line in io.lines(prefix .. "-" .. id .. ".tsv") do
      local k, c, a = line:match("^([^\t]+)\t([^\t]+)\t([^\t]+)$")
      requests[#requests + 1] = method .. " " .. path .. " HTTP/1.1\r\nHost: " .. host .. "\r\nApp-Attest-Key-Id: " .. k ..
        "\r\nApp-Attest-Challenge: " .. c .. "\r\nApp-Attest-Assertion: " .. a .. "\r\n" .. extra .. "\r\n"
    end
  end
  n = #requests
  i = 0
  calls = 0
  if n == 0 then error("feed.lua: no prepared requests for thread " .. id) end
end

function request()
  calls = calls + 1
  i = i + 1
  if i > n then
    if wrap then i = 1 else i = n end
  end
  if body then return requests[i] .. body end
  return requests[i]
end

function done(summary, latency, requests)
  local used, sizes, ran_out = {}, {}, false
  for _, t in ipairs(threads) do
    local c, size = t:get("calls"), t:get("n")
    used[#used + 1] = tostring(c)
    sizes[#sizes + 1] = tostring(size)
    if c > size and t:get("wrap") ~= true then ran_out = true end
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.1f},"used":[%s],"pool":[%s],"ran_out":%s}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
    table.concat(used, ","), table.concat(sizes, ","), tostring(ran_out)))
end
