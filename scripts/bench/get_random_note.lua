-- GET /notes/{id} with a random id among the seeded notes (NOTES env, default 10000).
local n = tonumber(os.getenv("NOTES") or "10000")
math.randomseed(os.time())
request = function()
  return wrk.format("GET", "/notes/" .. math.random(1, n))
end
