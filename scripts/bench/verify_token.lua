-- POST /tokens/verify cycling through TOKENS_FILE: valid, revoked and unknown raw tokens.
-- Requests are formatted once, in init (see get_random_note.lua).
local requests = {}
local i = 0

function init(args)
  for line in io.lines(os.getenv("TOKENS_FILE") or error("set TOKENS_FILE")) do
    requests[#requests + 1] = wrk.format("POST", "/tokens/verify",
      { ["Content-Type"] = "application/json" }, '{"token":"' .. line .. '"}')
  end
end

function request()
  i = i % #requests + 1
  return requests[i]
end
