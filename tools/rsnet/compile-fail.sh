#!/usr/bin/env bash
# Compile-fail tests of the rust/ abstractions' safety contracts: each case
# in tools/testing/selftests/rsnet/compile_fail/ is a small module that
# misuses an abstraction and must be rejected by rustc with the error code
# its first line names ("// expect: E0599"), or with the message it names
# for borrow-check errors, which have no code ("// expect: lifetime may not
# live long enough"), or, for "// expect: ok", compile. Each case is type-checked only (--emit=metadata) with the exact
# rustc command Kbuild used for sch_fq_rs, so it costs about a second.
#
# Prints one kselftest-style KTAP block (as run_many does for a program),
# so the check judge counts its results with the VM's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

build=$(kbuild_dir)
dir=$RSNET_TOP/tools/testing/selftests/rsnet/compile_fail
# sch_fq_rs's command; against a kernel that builds sch_fq_rs in-tree (the
# series), that of its out-of-tree oracle build, the same but for a --cfg.
src=sch_fq_rs
cmdfile=$RSNET_TOP/net/sched/.$src.o.cmd
[ -f "$cmdfile" ] || { src=sch_fq_rs_vt; cmdfile=$RSNET_TOP/net/sched/.$src.o.cmd; }
[ -f "$cmdfile" ] || die "no $cmdfile: build the modules first"
# Kbuild's rustc command, without the objtool step that follows it.
cmd=$(sed -n 's/^savedcmd_[^ ]* := //p' "$cmdfile" | sed 's/ *;.*//; s/ *$//')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mapfile -t cases < <(cd "$dir" && ls ./*.rs | sed 's#^\./##')
echo "# selftests: rsnet: compile_fail"
echo "# TAP version 13"
echo "# 1..${#cases[@]}"
n=0 bad=0
for c in "${cases[@]}"; do
	n=$((n + 1))
	name=${c%.rs}
	want=$(sed -n '1s#^// expect: ##p' "$dir/$c")
	what=$(sed -n '2s#^// ##p' "$dir/$c")
	# Same flags; own crate name, source and output (metadata only).
	one=$(sed -E "s# --crate-name [^ ]+# --crate-name cf_$name#;
		s# --out-dir [^ ]+# --out-dir $tmp#;
		s# --emit=dep-info=[^ ]+##; s# --emit=(obj|llvm-bc)=[^ ]+# --emit=metadata=$tmp/$name.rmeta#;
		s# [^ ]+/$src\.rs\$# $dir/$c#;
		s#^RUST_MODFILE=[^ ]+ ##" <<<"$cmd")
	set +e
	(cd "$build" && RUSTC_BOOTSTRAP=1 RUST_MODFILE=$name eval "$one") >"$tmp/$name.log" 2>&1
	rc=$?
	set -e
	got=$(grep -oE '^error\[E[0-9]+\]' "$tmp/$name.log" | head -1 | tr -d 'error[]' || true)
	# A message rather than a code: the first error's message.
	[[ $want == E[0-9]* || $want == ok ]] ||
		got=$(sed -n 's/^error: //p' "$tmp/$name.log" | head -1)
	if [ "$want" = ok ]; then
		[ $rc = 0 ] && res=ok || res="not ok"
		got=${got:-ok}
	else
		[ $rc != 0 ] && [ "$got" = "$want" ] && res=ok || res="not ok"
		[ $rc = 0 ] && got="compiled"
	fi
	if [ "$res" != ok ]; then
		bad=$((bad + 1))
		echo "# # $name: expected $want, got ${got:-another error}:"
		grep -E '^(error|warning)' -A3 "$tmp/$name.log" | head -12 | sed 's/^/# # /'
	fi
	echo "# $res $n $name: $what ($want)"
done
echo "# # Totals: pass:$((n - bad)) fail:$bad xfail:0 xpass:0 skip:0 error:0"
if [ $bad = 0 ]; then echo "ok 1 selftests: rsnet: compile_fail"; else echo "not ok 1 selftests: rsnet: compile_fail # exit=1"; fi
