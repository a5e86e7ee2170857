-- POST /tokens/verify cycling through TOKENS_FILE: valid, revoked and unknown raw tokens.
local tokens = {}
for line in io.lines(os.getenv("TOKENS_FILE") or error("set TOKENS_FILE")) do
  tokens[#tokens + 1] = '{"token":"' .. line .. '"}'
end
local i = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  i = i % #tokens + 1
  return wrk.format(nil, "/tokens/verify", nil, tokens[i])
end
