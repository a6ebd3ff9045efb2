-- SPDX-License-Identifier: MIT
-- Teardown: leaves N live objects (default 1,000,000: small tables, each with a short string)
-- in a global for lua_close to free. Run with SEFER_LUA_TIMES=1 to see how long close takes.
-- usage: teardown.lua [n]
local n = tonumber(arg and arg[1]) or 1000000
keep = {}
for i = 1, n // 2 do
	keep[i] = { i }
	keep[n // 2 + i] = "s" .. i
end
print("live objects", n)
