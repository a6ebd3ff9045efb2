-- Reading stdin from a script: lines counted and summed.
local n, sum = 0, 0
for line in io.lines() do n = n + 1; sum = sum + #line end
print("lines", n, "bytes", sum)
