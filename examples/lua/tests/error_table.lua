-- A non-string error object without __tostring.
error({ code = 1 })
