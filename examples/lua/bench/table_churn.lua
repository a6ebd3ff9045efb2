-- SPDX-License-Identifier: MIT
-- Table churn: many small tables made and dropped; an array grown with table.insert and
-- shrunk with table.remove (at the back, and at the front while it is short); a FIFO queue;
-- records replaced at random positions (a fixed linear congruential generator).
-- usage: table_churn.lua [steps]   (prints a checksum; deterministic)
local steps = tonumber(arg and arg[1]) or 1500000

local seed = 12345
local function rnd(n)
	seed = (seed * 1103515245 + 12345) % 2147483648
	return seed % n + 1
end

local live = {}
for i = 1, 5000 do live[i] = { id = i, tag = "r" .. i, v = { i, i * 2 } } end
local arr = {}
local queue, qhead, qtail = {}, 1, 0
local sum = 0
for s = 1, steps do
	local k = rnd(5000)
	local old = live[k]
	sum = sum + old.v[1] + #old.tag
	live[k] = { id = s, tag = "r" .. (s % 1000), v = { s % 977, k } }
	local n = #arr
	if n < 64 or s % 3 ~= 0 then
		table.insert(arr, { s, k })
	elseif n < 256 and s % 2 == 0 then
		sum = sum + table.remove(arr, 1)[1]
	else
		sum = sum + table.remove(arr)[2]
	end
	if n > 2048 then
		for _ = 1, 1024 do sum = sum + table.remove(arr)[1] end
	end
	qtail = qtail + 1
	queue[qtail] = { s, k }
	if qtail - qhead >= 1000 then
		sum = sum + queue[qhead][2]
		queue[qhead] = nil
		qhead = qhead + 1
	end
	sum = sum % 1000000007
end
print("checksum", sum, #arr, qtail - qhead + 1)
