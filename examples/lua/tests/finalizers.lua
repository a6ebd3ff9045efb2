-- Finalizers that allocate while lua_close runs them: strings built, tables grown and
-- shrunk, a resurrected object. The host's closing allocator frees nothing but must still
-- allocate and resize; the output must match lua5.4's.
local log = {}
local function mk(i)
	return setmetatable({ id = i, payload = string.rep("p", i * 10) }, {
		__gc = function(o)
			local parts = {}
			for k = 1, 200 do parts[k] = o.id .. ":" .. k end
			local s = table.concat(parts, ",")
			local t = {}
			for k = 1, 1000 do t[k] = { k } end
			for k = 1000, 10, -1 do t[k] = nil end
			collectgarbage("step")
			print("gc", o.id, #s, #o.payload, #t)
			if o.id == 3 then resurrected = o end
		end,
	})
end
for i = 1, 5 do keep = mk(i) end
mk(99)
collectgarbage()
do
	local res <close> = setmetatable({}, { __close = function() print("closed a to-be-closed") end })
	print("in block")
end
print("end of script")
