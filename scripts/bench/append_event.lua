-- POSTs a 1-cent deposit to one of ACCOUNTS accounts (bench-0 .. bench-N-1), chosen at random.
local accounts = tonumber(os.getenv("ACCOUNTS") or "1")
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"event_type":"MoneyDeposited","payload":{"amount_cents":1}}'
request = function()
  return wrk.format(nil, "/accounts/bench-" .. math.random(0, accounts - 1) .. "/events")
end
done = function(summary, latency, requests)
  io.write(string.format("non-2xx answers: %d, socket errors: %d\n", summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
