-- SPDX-License-Identifier: MIT
-- String building: concatenation in a loop, table.concat buffers, gsub with patterns and
-- functions, string.format and string.rep; most strings die young, some grow long.
-- usage: strings.lua [rounds]   (prints a checksum; deterministic)
local rounds = tonumber(arg and arg[1]) or 3000

local function hash(s, h)
	for i = 1, #s, 7 do h = (h * 31 + s:byte(i)) % 4294967291 end
	return h
end

local h, total = 0, 0
for r = 1, rounds do
	-- a line built piece by piece
	local s = ""
	for i = 1, 200 do s = s .. (i % 10) .. "," end
	-- a buffer of formatted records, joined once
	local buf = {}
	for i = 1, 300 do buf[#buf + 1] = string.format("%05d:%s;", i * r % 99991, ("x"):rep(i % 17)) end
	local joined = table.concat(buf)
	-- rewrites
	local g = joined:gsub("%d+", function(d) return tostring(#d + r % 7) end)
	g = g:gsub("x+", "<%0>")
	local words = {}
	for w in g:gmatch("[^;]+") do words[#words + 1] = w:upper() end
	local out = table.concat(words, "|", 1, #words)
	total = total + #s + #joined + #g + #out
	h = hash(out, hash(s, h))
end
print("checksum", total, h)
