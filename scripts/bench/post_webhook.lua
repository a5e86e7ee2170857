-- wrk: POST /webhook with pre-signed, distinct 1 KB bodies (wrk's Lua cannot compute an HMAC).
--   python3 scripts/bench/webhook_pool.py --secret "$WEBHOOK_SECRET" --count 100000 --out /tmp/pool
--   WEBHOOK_POOL=/tmp/pool wrk -t1 -c16 -d10s -s scripts/bench/post_webhook.lua http://127.0.0.1:8080/webhook
-- The server must run with the same WEBHOOK_SECRET, and the run must start within 300 s of
-- generating the pool. With -tN set WEBHOOK_POOL_THREADS=N: the threads take disjoint slices.
-- When a thread exhausts its slice it starts over; those requests are exact replays (202 with
-- the original id, nothing stored) and are reported separately.
--
-- Every request is formatted once, in init (before wrk starts its clock), and there is no
-- response() callback: wrk shares this 2-core machine with the server, and building a 1 KB
-- request plus handing every response to Lua cost it ~4x the CPU per request of the GET
-- scripts, CPU the server then did not get. wrk counts non-2xx answers itself.

local threads = {}
local count = 0

function setup(thread)
  thread:set("id", count)
  count = count + 1
  table.insert(threads, thread)
end

function init(args)
  local path = os.getenv("WEBHOOK_POOL") or error("set WEBHOOK_POOL to the file from webhook_pool.py")
  local stride = tonumber(os.getenv("WEBHOOK_POOL_THREADS") or "1")
  pool = {}
  local i = 0
  for line in io.lines(path) do
    if i % stride == id then
      local tab = line:find("\t", 1, true)
      pool[#pool + 1] = wrk.format("POST", "/webhook",
        { ["X-Webhook-Signature"] = line:sub(1, tab - 1), ["Content-Type"] = "application/json" },
        line:sub(tab + 1))
    end
    i = i + 1
  end
  nxt, replays, wrapped = 1, 0, 0
end

function request()
  local r = pool[nxt]
  nxt = nxt + 1
  if nxt > #pool then
    nxt = 1
    wrapped = wrapped + 1
  end
  if wrapped > 0 then
    replays = replays + 1
  end
  return r
end

function done(summary, latency, requests)
  io.write(string.format("webhook: %d non-2xx answers, %d socket errors\n", summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
  for _, t in ipairs(threads) do
    io.write(string.format("webhook thread %d: %d replays (pool wrapped %d times)\n",
      t:get("id"), t:get("replays"), t:get("wrapped")))
  end
end
