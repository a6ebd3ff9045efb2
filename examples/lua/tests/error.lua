-- A runtime error: message and traceback on stderr, exit status 1; stdout flushed before.
local function inner(x) return x.field.missing end
local function outer() return inner({}) end
print("before the error")
outer()
print("not reached")
