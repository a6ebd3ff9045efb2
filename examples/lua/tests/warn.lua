-- warn(): off by default (unless -W), "@on" turns it on; messages may come in pieces.
warn("not shown unless -W")
warn("@on")
warn("first ", "second ", "third")
warn("@off")
warn("hidden again")
print("done")
