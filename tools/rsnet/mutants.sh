#!/usr/bin/env bash
# Build mutants of the Rust fq as oracle-only modules (fqm_NAME.ko, each the
# oracle build of net/sched/sch_fq_rs.rs with one mutation, its clock
# redirected by vclock.sh) into $RSNET_TOP/.mutants, for fq_mutants.sh to
# run through the differential oracle in the VM.
#
#   mutants.sh all              every mutant (make mutants)
#   mutants.sh sample N [SEED]  N drawn from SEED (default: a fresh one,
#                               printed) (make check)
#   mutants.sh names NAME...    those (make mutants FQ_MUTANTS="NAME...")
#
# The mutants are tools/testing/selftests/rsnet/mutants/*.mutants, applied
# by tools/rsnet/mutants.py, which fails if a snippet is not found exactly
# once in the file as it is now.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

build=$(kbuild_dir)
out=$RSNET_TOP/.mutants
log=$LOGDIR/mutants.log
py=$RSNET_TOP/tools/rsnet/mutants.py
case ${1:-} in
all) names=$(python3 "$py" select all) || die "selecting the mutants failed"
	seed=all ;;
sample)
	seed=${3:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
	names=$(python3 "$py" select "${2:?sample N}" "$seed") || die "selecting the mutants failed"
	step "mutants: a sample of $2 from seed $seed (FQ_MUTANTS_SEED=$seed repeats it)" ;;
names)
	shift
	names=$*
	seed="names: $*" ;;
*) die "usage: mutants.sh all | sample N [SEED] | names NAME..." ;;
esac
rm -rf "$out"
# shellcheck disable=SC2086 # one name a word
python3 "$py" write "$out" $names || die "applying the mutants failed"
echo "$seed" >"$out/seed"
n=$(wc -l <"$out/list")
step "building $n mutants of sch_fq_rs.rs (log: $log)"
t0=$SECONDS
make -C "$build" M="$out" LLVM="$RSNET_LLVM" -j"$(nproc)" modules >"$log" 2>&1 ||
	die "building the mutants failed" "$log"
# A mutant that reaches the real clock is refused by vclock.sh: killed at
# build (fq_mutants.sh reports fqm_NAME.escape); the others are redirected.
if ! bash "$RSNET_TOP/tools/rsnet/vclock.sh" "$out"/fqm_*.ko >"$out/vclock.log" 2>&1; then
	# vclock.sh names each module it refuses: "vclock: MODULE.ko ...".
	for ko in "$out"/fqm_*.ko; do
		grep -F "vclock: $ko " "$out/vclock.log" >"${ko%.ko}.escape" || rm "${ko%.ko}.escape"
	done
	[ -n "$(find "$out" -maxdepth 1 -name 'fqm_*.escape')" ] ||
		die "redirecting the mutants' clock failed" "$out/vclock.log"
fi
cat "$out/vclock.log" >>"$log"
[ "$(find "$out" -maxdepth 1 -name 'fqm_*.ko' | wc -l)" = "$n" ] ||
	die "not every mutant was built" "$log"
step "built $n mutants in $((SECONDS - t0)) s"
