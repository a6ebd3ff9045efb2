-- A non-string error object with __tostring: its string is the message.
local obj = setmetatable({}, { __tostring = function() return "custom error object" end })
error(obj)
