-- wrk: POST /webhook with pre-signed, distinct 1 KB bodies (wrk's Lua cannot compute an HMAC).
--   python3 scripts/bench/webhook_pool.py --secret "$WEBHOOK_SECRET" --count 100000 --out /tmp/pool
--   WEBHOOK_POOL=/tmp/pool wrk -t1 -c16 -d10s -s scripts/bench/post_webhook.lua http://127.0.0.1:8080/webhook
-- The server must run with the same WEBHOOK_SECRET, and the run must start within 300 s of
-- generating the pool. With -tN set WEBHOOK_POOL_THREADS=N: the threads take disjoint slices.
-- When a thread exhausts its slice it starts over; those requests are exact replays (202 with
-- the original id, nothing stored) and are reported separately.

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
      pool[#pool + 1] = { line:sub(1, tab - 1), line:sub(tab + 1) }
    end
    i = i + 1
  end
  nxt, accepted, other, replays, wrapped = 1, 0, 0, 0, 0
end

function request()
  local d = pool[nxt]
  nxt = nxt + 1
  if nxt > #pool then
    nxt = 1
    wrapped = wrapped + 1
  end
  if wrapped > 0 then
    replays = replays + 1
  end
  return wrk.format("POST", "/webhook",
    { ["X-Webhook-Signature"] = d[1], ["Content-Type"] = "application/json" }, d[2])
end

function response(status, headers, body)
  if status == 202 then
    accepted = accepted + 1
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  for _, t in ipairs(threads) do
    io.write(string.format("webhook thread %d: %d accepted (202), %d other statuses, %d replays (pool wrapped %d times)\n",
      t:get("id"), t:get("accepted"), t:get("other"), t:get("replays"), t:get("wrapped")))
  end
end
