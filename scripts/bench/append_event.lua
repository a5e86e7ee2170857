-- POSTs a 1-cent deposit to one of ACCOUNTS accounts (bench-0 .. bench-N-1), chosen at random.
-- Requests are formatted once, in init (see get_random_note.lua).
local accounts = tonumber(os.getenv("ACCOUNTS") or "1")
local body = '{"event_type":"MoneyDeposited","payload":{"amount_cents":1}}'
local requests = {}

function init(args)
  for a = 1, accounts do
    requests[a] = wrk.format("POST", "/accounts/bench-" .. (a - 1) .. "/events",
      { ["Content-Type"] = "application/json" }, body)
  end
end

function request()
  return requests[math.random(1, accounts)]
end

function done(summary, latency, per_request)
  io.write(string.format("non-2xx answers: %d, socket errors: %d\n", summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
