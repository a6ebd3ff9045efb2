-- A syntax error: reported by the loader, the chunk never runs.
print("x" +
