#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fastbin decision (Documentation/policies/fastbin.rst): bulk churn 16/64/256/1024 B and
# steady churn (256 live blocks) under glibc, mimalloc, sefer without and with the magazine,
# interleaved and repeated (the median of ROUNDS runs is reported, in Mops/s).
#   measure.sh BENCHDIR LIBSEFER_OFF.so LIBSEFER_ON.so [ROUNDS]
set -eu
bin=$1 off=$2 on=$3 rounds=${4:-5}
mi=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2
declare -A lib=([glibc]="" [mimalloc]=$mi [sefer]=$off [sefer+fastbin]=$on)
order="glibc mimalloc sefer sefer+fastbin"
work="bulk:16 bulk:64 bulk:256 bulk:1024 steady:256"
tmp=$(mktemp)
for r in $(seq "$rounds"); do
	for w in $work; do
		prog=${w%%:*} size=${w##*:}
		for a in $order; do
			ops=2000000
			v=$(LD_PRELOAD=${lib[$a]} "$bin/$prog" --size "$size" --ops "$ops" |
				sed -n 's/.*ops_per_s=\([0-9.]*\).*/\1/p')
			echo "$w $a $v" >>"$tmp"
		done
	done
done
printf '%-11s' workload; for a in $order; do printf ' %14s' "$a"; done
printf ' %9s %9s %9s\n' "fb/sefer" "fb/mi" "fb/glibc"
for w in $work; do
	printf '%-11s' "$w"
	declare -A med=()
	for a in $order; do
		med[$a]=$(awk -v w="$w" -v a="$a" '$1 == w && $2 == a {print $3}' "$tmp" | sort -g |
			awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)] / 1e6}')
		printf ' %14.1f' "${med[$a]}"
	done
	awk -v f="${med[sefer+fastbin]}" -v s="${med[sefer]}" -v m="${med[mimalloc]}" \
		-v g="${med[glibc]}" 'BEGIN {printf " %9.2f %9.2f %9.2f\n", f / s, f / m, f / g}'
done
rm -f "$tmp"
