#!/bin/bash
# SPDX-License-Identifier: MIT
# check-lua.sh SRCTREE HOSTDIR: sefer-lua (and sefer-lua-libc, the bench baseline) against
# lua5.4 on the scripts of examples/lua/tests and small runs of examples/lua/bench: the same
# stdout, the same stderr (the program name aside) and the same exit status, case by case.
# Then: SEFER_LUA_CLOSE=free (per-object frees at close) gives the same output; SEFER_SHOW_STATS=1
# prints sefer's stats at exit; sefer-lua exports none of sefer's names (static inside it).
set -u
src=$1 hosts=$2
ref=$(command -v lua5.4) || { echo "FAIL: lua5.4 not installed (scripts/install-deps)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0 n=0
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
cd "$src/examples/lua/tests" || exit 1
printf 'one\ntwo\nthree\n' >"$work/input"

# run HOST ENV STDIN ARGS...: stdout, normalised stderr and status in $work/<tag>.*
run() {
	local host=$1 envs=$2 in=$3 tag=$4
	shift 4
	env $envs "$host" "$@" <"$in" >"$work/$tag.out" 2>"$work/$tag.err"
	echo "status $?" >>"$work/$tag.out"
	sed -i "s#^$host:#PROG:#; s#^$ref:#PROG:#" "$work/$tag.err"
}

# same NAME ENV STDIN ARGS...: every host against lua5.4
same() {
	local name=$1 envs=$2 in=$3 h
	shift 3
	n=$((n + 1))
	run "$ref" "$envs" "$in" ref "$@"
	for h in "$hosts/sefer-lua" "$hosts/sefer-lua-libc"; do
		run "$h" "$envs" "$in" host "$@"
		if ! diff -u "$work/ref.out" "$work/host.out" >"$work/diff" ||
			! diff -u "$work/ref.err" "$work/host.err" >>"$work/diff"; then
			bad "$name ($(basename "$h") vs lua5.4):"
			head -20 "$work/diff"
		fi
	done
}

none=/dev/null
same "arguments" "" $none args.lua a "b c" ""
same "arguments after --" "" $none -- args.lua z
same "runtime error and traceback" "" $none error.lua
same "error object with __tostring" "" $none error_object.lua
same "error object without __tostring" "" $none error_table.lua
same "syntax error" "" $none syntax.lua
same "missing script" "" $none no_such_script.lua
same "os.exit(7)" "" $none exit.lua
same "os.exit(true, true) closes the state" "" $none exit_close.lua
same "finalizers allocating during lua_close" "" $none finalizers.lua
same "finalizers, SEFER_LUA_CLOSE=free" "SEFER_LUA_CLOSE=free" $none finalizers.lua
same "warnings off" "" $none warn.lua
same "warnings on (-W)" "" $none -W warn.lua
same "script reading stdin" "" "$work/input" stdin_lines.lua
same "script from stdin (-)" "" stdlib.lua - x y
same "-e chunks" "" $none -e 'print(1)' -e 'x = 2' -e 'print(x)'
same "-e error" "" $none -e 'error("from -e")'
same "-l module" "" $none -l string -e 'print(type(string.format))'
same "-v" "" $none -v
same "LUA_INIT" "LUA_INIT=print('init')" $none args.lua
same "LUA_INIT ignored under -E" "LUA_INIT=print('init')" $none -E args.lua
same "standard library tour" "" $none stdlib.lua
b=../bench
same "binary_trees" "" $none $b/binary_trees.lua 8
same "strings" "" $none $b/strings.lua 20
same "table_churn" "" $none $b/table_churn.lua 20000
same "teardown" "" $none $b/teardown.lua 20000
same "teardown, SEFER_LUA_CLOSE=free" "SEFER_LUA_CLOSE=free" $none $b/teardown.lua 20000
# the state made on the main thread and run on another, its heap released and adopted
same "state moved to another thread" "SEFER_LUA_MOVE=1" $none stdlib.lua
same "binary_trees, state moved" "SEFER_LUA_MOVE=1" $none $b/binary_trees.lua 8
same "finalizers, state moved" "SEFER_LUA_MOVE=1" $none finalizers.lua
same "runtime error, state moved" "SEFER_LUA_MOVE=1" $none error.lua
echo "ok   $((n - fails)) of $n cases: sefer-lua and sefer-lua-libc match lua5.4" \
	"(stdout, stderr, status)"

if SEFER_SHOW_STATS=1 "$hosts/sefer-lua" stdlib.lua 2>"$work/stats" >/dev/null &&
	grep -q '^sefer: stats of sefer-lua (pid [0-9]*)' "$work/stats"; then
	echo "ok   SEFER_SHOW_STATS=1: $(grep -c '^sefer:' "$work/stats") lines of sefer stats at exit"
else
	bad "SEFER_SHOW_STATS=1 printed no stats: $(head -3 "$work/stats")"
fi

if SEFER_LUA_MOVE=1 "$hosts/sefer-lua" $b/binary_trees.lua 10 >/dev/null 2>"$work/move" &&
	! grep -q "misuse" "$work/move"; then
	echo "ok   SEFER_LUA_MOVE=1: binary_trees 10 ran on a second thread, its heap moved"
else
	bad "SEFER_LUA_MOVE=1: $(head -3 "$work/move")"
fi

# The names sefer.c gives external linkage when compiled alone (its API and internals): none
# may be a global symbol of sefer-lua, which includes it with SEFER_STATIC_ALL/_API.
cc -std=gnu11 -O2 -c -o "$work/sefer.o" "$hosts/vendor/amalgamation/sefer.c"
nm -g --defined-only "$work/sefer.o" | awk '{print $3}' | sort -u >"$work/sefer.names"
leaked=$(comm -12 "$work/sefer.names" \
	<(nm -g --defined-only "$hosts/sefer-lua" | awk '{print $3}' | sort -u))
if [ "$(wc -l <"$work/sefer.names")" -gt 100 ] && [ -z "$leaked" ]; then
	echo "ok   none of the $(wc -l <"$work/sefer.names") names sefer.c exports alone is" \
		"global in sefer-lua"
else
	bad "sefer-lua exports sefer's $(echo $leaked | head -c 300)" \
		"(of $(wc -l <"$work/sefer.names") names)"
fi
[ $fails -eq 0 ]
