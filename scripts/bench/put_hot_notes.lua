-- PUTs to one of a few notes (NOTE_IDS, comma-separated), chosen at random: many clients
-- editing the same rows at once. Requests are formatted once, in init (see get_random_note.lua).
local requests = {}

function init(args)
  for id in string.gmatch(os.getenv("NOTE_IDS") or "1,2", "[^,]+") do
    requests[#requests + 1] = wrk.format("PUT", "/notes/" .. id,
      { ["Content-Type"] = "application/json" }, '{"title":"hot","body":"edited under load"}')
  end
end

function request()
  return requests[math.random(1, #requests)]
end

function done(summary, latency, per_request)
  io.write(string.format("non-2xx answers: %d, socket errors: %d\n", summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
