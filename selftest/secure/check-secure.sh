#!/bin/bash
# SPDX-License-Identifier: MIT
# check-secure BIN WORKDIR: a setuid-root program run by 'nobody' ignores SEFER_ON_ERROR=warn
# (and every other option that weakens a check, prints or raises a limit, in a variable of its
# own or in SEFER_OPTIONS): its double free still aborts with sefer's report. The same program without the setuid bit takes the warning,
# which shows the test can fail. Needs root (to chown and setuid); skips otherwise.
set -u
bin=$1 dir=$2

if [ "$(id -u)" != 0 ]; then
	echo "skip: check-secure needs root (setuid-root copy, run as nobody)"
	exit 0
fi
mkdir -p "$dir"
# The copy must live on a file system that honours setuid, on a path 'nobody' can reach.
for d in "$dir" /var/tmp /tmp; do
	case ",$(findmnt -n -o OPTIONS -T "$d")," in *,nosuid,*) continue;; esac
	t=$(mktemp -d "$d/secure.XXXXXX") || continue
	chmod 755 "$t"
	cp "$bin" "$t/double_free" && chmod 755 "$t/double_free"
	if setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$t/double_free"; then
		work=$t
		break
	fi
	rm -rf "$t"
done
if [ -z "${work:-}" ]; then
	echo "FAIL: no directory that honours setuid and that nobody can reach"
	exit 1
fi
trap 'rm -rf "$work"' EXIT
prog=$work/double_free
fail=0

# run NAME ENV...: as nobody, stdout to $work/NAME.out, stderr to $work/NAME.err; sets rc
run() {
	local name=$1
	shift
	{ env -i PATH=/usr/bin:/bin "$@" setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$prog" >"$work/$name.out" 2>"$work/$name.err"; } 2>/dev/null
	rc=$?
}
bad() {
	echo "FAIL: $*"
	sed 's/^/  stdout: /' "$work/$name.out"
	sed 's/^/  stderr: /' "$work/$name.err"
	fail=1
}

# 1. No setuid bit: the same environment does turn the double free into a warning.
name=plain
chown root:root "$prog" && chmod 755 "$prog"
run plain SEFER_ON_ERROR=warn
if [ $rc -ne 0 ] || ! grep -q 'secure=0$' "$work/plain.out" ||
   ! grep -q '^survived$' "$work/plain.out" ||
   ! grep -q '^sefer: double free of 0x[0-9a-f]* (' "$work/plain.err"; then
	bad "not setuid, SEFER_ON_ERROR=warn: expected a report and a normal exit (rc $rc)"
else
	echo "ok   not setuid: SEFER_ON_ERROR=warn honoured (report, then exit 0)"
fi

# 2. setuid root, run by nobody: the warning is ignored, the double free aborts.
name=setuid
chmod 4755 "$prog"
run setuid SEFER_ON_ERROR=warn
if [ $rc -ne 134 ] || ! grep -q '^euid=0 secure=1$' "$work/setuid.out" ||
   grep -q '^survived$' "$work/setuid.out" ||
   ! grep -q '^sefer: double free of 0x[0-9a-f]* (' "$work/setuid.err"; then
	bad "setuid, SEFER_ON_ERROR=warn: expected euid 0, AT_SECURE, a report and SIGABRT (rc $rc)"
else
	echo "ok   setuid root as nobody: SEFER_ON_ERROR=warn ignored (report, then SIGABRT)"
fi

# 3. setuid: options that print, raise limits or are malformed leave no trace; the one line on
# stderr is the report.
name=quiet
run quiet SEFER_ON_ERROR=warn SEFER_VERBOSE=1 SEFER_SHOW_STATS=1 SEFER_PURGE_DELAY_MS=soon \
	SEFER_LARGE_CACHE_BUDGET=lots SEFER_LARGE_CACHE_HEADROOM=64G
if [ $rc -ne 134 ] || [ "$(grep -c . "$work/quiet.err")" != 1 ] ||
   ! grep -q '^sefer: double free of ' "$work/quiet.err"; then
	bad "setuid with every option set: expected only the report and SIGABRT (rc $rc)"
else
	echo "ok   setuid: SEFER_VERBOSE, SEFER_SHOW_STATS and bad values print nothing"
fi

# 4. The same options without setuid do print (the check above can fail).
name=loud
chmod 755 "$prog"
run loud SEFER_ON_ERROR=warn SEFER_VERBOSE=1 SEFER_PURGE_DELAY_MS=soon
if ! grep -q '^sefer: initialised' "$work/loud.err" ||
   ! grep -q "^sefer: bad value 'soon' for SEFER_PURGE_DELAY_MS" "$work/loud.err"; then
	bad "not setuid, SEFER_VERBOSE=1: expected the init line and the bad-value line"
else
	echo "ok   not setuid: SEFER_VERBOSE=1 and a bad value are reported"
fi
# 5. setuid: SEFER_OPTIONS obeys the same rules as the variables: what weakens, prints or raises
# is refused (origin "secure execution"), a lower number is taken, and neither the unknown
# names nor the out-of-range value are reported.
name=options
chmod 4755 "$prog"
opts="on_error=warn,purge_delay_ms=10000,calloc_prefault=1M,verbose=1,show_stat=1"
run options SEFER_OPTIONS=$opts SEFER_SHOW_STAT=1 SEFER_PURGE_DELAY_MS=99999999999999999999
if [ $rc -ne 134 ] || [ "$(grep -c . "$work/options.err")" != 1 ] ||
   ! grep -q '^sefer: double free of ' "$work/options.err" ||
   ! grep -qx 'on_error=abort (secure execution)' "$work/options.out" ||
   ! grep -qx 'purge_delay_ms=50 (secure execution)' "$work/options.out" ||
   ! grep -qx 'calloc_prefault=1M (SEFER_OPTIONS)' "$work/options.out" ||
   ! grep -qx 'verbose=0 (secure execution)' "$work/options.out" ||
   ! grep -qx 'show_stats=0 (default)' "$work/options.out"; then
	bad "setuid, SEFER_OPTIONS: expected warn, the raise and verbose refused, 1M taken, silence"
else
	echo "ok   setuid: SEFER_OPTIONS refuses warn, verbose and a raise, takes a lower number"
fi

# 6. The same environment without setuid: every item applies and each mistake is named.
name=options-plain
chmod 755 "$prog"
run options-plain SEFER_OPTIONS=$opts SEFER_SHOW_STAT=1 \
	SEFER_PURGE_DELAY_MS=99999999999999999999
e=$work/options-plain.err
if [ $rc -ne 0 ] || ! grep -qx 'on_error=warn (SEFER_OPTIONS)' "$work/options-plain.out" ||
   ! grep -qx 'purge_delay_ms=10000 (SEFER_OPTIONS)' "$work/options-plain.out" ||
   ! grep -qx 'verbose=1 (SEFER_OPTIONS)' "$work/options-plain.out" ||
   ! grep -qx 'sefer: unknown option SEFER_SHOW_STAT (did you mean SEFER_SHOW_STATS?)' "$e" ||
   ! grep -q "^sefer: SEFER_OPTIONS: unknown option show_stat (did you mean show_stats?)" "$e" ||
   ! grep -q "^sefer: value '99999999999999999999' for SEFER_PURGE_DELAY_MS is out of range" \
	"$e" || ! grep -qx 'sefer: option SEFER_ON_ERROR=warn (SEFER_OPTIONS)' "$e"; then
	bad "not setuid, SEFER_OPTIONS: expected every item applied and each mistake named"
else
	echo "ok   not setuid: SEFER_OPTIONS applies, unknown names and the range are reported"
fi
exit $fail
