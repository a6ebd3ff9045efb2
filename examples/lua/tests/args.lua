-- The chunk's varargs and the arg table (indices 0..n; below 0 are the host's own).
print("varargs", select("#", ...), ...)
for i = 0, #arg do print(i, arg[i]) end
print("negative", arg[-1] ~= nil)
