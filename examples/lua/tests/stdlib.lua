-- A tour of the standard library: strings, patterns, math, tables, utf8, coroutines, load.
print(string.format("%5.2f|%-5s|%x|%q", math.pi, "ab", 255, "a\nb"))
print(("hello world"):gsub("o", "0"), ("abc"):rep(3, "-"), ("Lua"):byte(1, -1))
local t = { 5, 3, 8, 1, 9, 2 }
table.sort(t, function(a, b) return a > b end)
print(table.concat(t, " "), table.unpack({ 1, 2, 3 }))
print(math.maxinteger, math.mininteger, 7 // 2, 7 % -3, 2 ^ 0.5, math.tointeger(3.0))
print(utf8.char(72, 228, 8364), utf8.len("häll€"))
local co = coroutine.wrap(function(a) local b = coroutine.yield(a + 1); return b * 2 end)
print(co(1), co(10))
print(load("return 6 * 7")(), select(2, pcall(error, "caught")))
print(string.pack and #string.pack("i4i8", 1, 2), tostring(nil), tonumber("0x10"))
local big = {}
for i = 1, 100000 do big[i] = i * i end
local s = 0
for _, v in ipairs(big) do s = s + v end
print("sum", s)
