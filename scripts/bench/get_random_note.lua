-- GET /notes/{id} with a random id among the seeded notes (NOTES env, default 10000).
-- Every script here formats its requests once, in init (wrk sets the Host header only by then):
-- wrk shares the machine's cores with the server, and formatting each request in Lua cost wrk
-- CPU the server then did not get (post_webhook.lua's 1 KB requests most of all).
local n = tonumber(os.getenv("NOTES") or "10000")
local requests = {}

function init(args)
  math.randomseed(os.time())
  for id = 1, n do
    requests[id] = wrk.format("GET", "/notes/" .. id)
  end
end

function request()
  return requests[math.random(1, n)]
end

function done(summary, latency, per_request)
  io.write(string.format("non-2xx answers: %d, socket errors: %d\n", summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
