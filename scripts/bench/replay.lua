-- Sends the requests of the pool file REQUESTS in order, wrapping at its end: one line per
-- request, "METHOD<TAB>PATH" or "METHOD<TAB>PATH<TAB>JSON BODY" (scripts/bench/pools.py writes
-- them). In order, so that a pool of distinct ids (DELETE, unique names) never repeats one within
-- a run shorter than the pool. USER_ID, when set, goes out as X-User-Id (the token routes).
-- Formatted once, in init (see get_random_note.lua).
local requests = {}
local user = os.getenv("USER_ID")

function init(args)
  local file = assert(io.open(os.getenv("REQUESTS"), "r"))
  for line in file:lines() do
    local method, path, body = line:match("^(%u+)\t([^\t]+)\t?(.*)$")
    local headers = {}
    if user then headers["X-User-Id"] = user end
    if body ~= nil and body ~= "" then
      headers["Content-Type"] = "application/json"
      requests[#requests + 1] = wrk.format(method, path, headers, body)
    else
      requests[#requests + 1] = wrk.format(method, path, headers)
    end
  end
  file:close()
end

local next_request = 0

function request()
  next_request = next_request % #requests + 1
  return requests[next_request]
end

function done(summary, latency, per_request)
  io.write(string.format("non-2xx answers: %d, socket errors: %d\n", summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
