-- os.exit(status, true) closes the state first (finalizers run), then exits.
setmetatable({}, { __gc = function() print("finalizer at close") end })
os.exit(true, true)
