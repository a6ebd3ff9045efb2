-- SPDX-License-Identifier: MIT
-- Tree building: complete binary trees of tables, built and walked depth by depth, with one
-- long-lived tree kept throughout (the classic allocation benchmark's shape).
-- usage: binary_trees.lua [maxdepth]   (prints a checksum; deterministic)
local maxdepth = tonumber(arg and arg[1]) or 16
local mindepth = 4
if maxdepth < mindepth + 2 then maxdepth = mindepth + 2 end

local function make(d)
	if d == 0 then return {} end
	d = d - 1
	return { make(d), make(d) }
end

local function check(t)
	if t[1] then return 1 + check(t[1]) + check(t[2]) end
	return 1
end

local sum = check(make(maxdepth + 1))
local long_lived = make(maxdepth)
for d = mindepth, maxdepth, 2 do
	local iters = 1 << (maxdepth - d + mindepth)
	local c = 0
	for _ = 1, iters do c = c + check(make(d)) end
	print(string.format("%d trees of depth %d\tcheck: %d", iters, d, c))
	sum = sum + c
end
sum = sum + check(long_lived)
print("checksum", sum)
