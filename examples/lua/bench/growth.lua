-- SPDX-License-Identifier: MIT
-- Growth of big objects: arrays filled by appends (Lua doubles the array part, so each
-- doubling is one realloc of the whole array, up to tens of MiB) and a string buffer built
-- piece by piece (luaL_Buffer grows its box the same way). Stresses realloc of large blocks:
-- an allocator that moves the pages keeps the bytes where they are, one that copies moves
-- them all at every doubling.
-- usage: growth.lua [elements]   (prints a checksum; deterministic)
local n = tonumber(arg and arg[1]) or 4000000

local total, h = 0, 0
for round = 1, 4 do
	-- an array of integers, then one of tables' worth of floats: 16-byte slots
	local t = {}
	for i = 1, n do t[i] = i * round end
	local f = {}
	for i = 1, n // 2 do f[#f + 1] = i / 4 end
	total = total + #t + #f
	h = (h * 31 + t[n] + t[n // 3] + math.floor(f[#f])) % 4294967291
	-- a string of about n bytes built through a buffer
	local parts = {}
	for i = 1, n // 16 do parts[i] = string.format("%015d", i * round) end
	local s = table.concat(parts)
	total = total + #s
	h = (h * 31 + s:byte(#s) + s:byte(#s // 2)) % 4294967291
end
print("checksum", total, h)
