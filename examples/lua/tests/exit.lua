-- os.exit with a status; io.write output is flushed at exit.
io.write("exiting with 7\n")
os.exit(7)
