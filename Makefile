# SPDX-License-Identifier: GPL-2.0
#
# rsnet: Rust-for-Linux networking features in a QEMU test kernel.
#
#   make run      build what is needed, boot the VM, show the modules working
#   make check    run the kselftests in the VM; ends with "N passed, N failed"
#   make vm       interactive shell in the test VM (make vm CMD='...' runs one)
#   make kernel   only prepare and build the test kernel (cached)
#   make modules  only build the out-of-tree modules
#   make bench    C vs Rust, on vs off (ROUNDS=5, BENCH=page_pool,tcp,
#                 fq,fqscale,fqslack picks the parts; cache misses per packet from
#                 a TCG cache model, CACHE=0: without; REPEAT=1: the rows
#                 of the model run twice and are compared)
#   make oracle   C fq against Rust fq on the same scripts, at scale
#                 (fq_oracle.sh; ORACLE_SEEDS=1000 ORACLE_OPS=1000)
#   make mutants  mutants of the Rust fq through the oracle: killed or
#                 survived, the kill rate (make check runs a sample)
#   make fuzz     random fq netlink requests, C against Rust, at scale
#                 (fq_fuzz.sh; FQ_FUZZ_SETS=50000)
#   make profile  TESTS="a.sh ...": those test programs in one VM under a
#                 TCG plugin, the functions that ran the most guest
#                 instructions (lockdep, unwinder, kmemleak, user shares)
#   make lint     rustfmt, clippy and checkpatch
#   make series   the patch series for a 7.2 tree ($RSNET_CACHE/series)
#   make series-check  that series applied to the pristine tree, built
#                 in-tree (EACH=1: every patch on its own, also for
#                 arm64 unless ARM64=0; EACH_X86=0: arm64 only), cross-built
#                 for arm64 (ARM64=0: not) and 32-bit ARM (ARM32=0:
#                 not), and make check run on it
#                 (SUITE=0: build only; a build that passed on the same
#                 series content is not run again, RECHECK=1 runs it)
#
# KCONFIG=kasan  the KASAN variant of the test kernel (own build directory)
# KDIR=/path     use your own prepared, built kernel tree instead
# RSNET_CACHE    where kernel trees and logs live (default /var/cache/rsnet)
#
# The modules themselves are built by Kbuild (make -C $KDIR M=$PWD).

T := tools/rsnet
export KCONFIG KDIR RSNET_CACHE TESTS VM_TIMEOUT ROUNDS BENCH CACHE REPEAT CHECK_VMS
export ORACLE_SEEDS ORACLE_PSEEDS ORACLE_OPS ORACLE_SEED ORACLE_BATCH ORACLE_OOO ORACLE_OOO_RAND ORACLE_SLACK_MS FQ_SOCKETS FQ_SOCKETS_DELAY_MS FQ_CHURN_N FQ_CHURN_GENS FQ_CHURN_PERIOD_MS FQ_CHURN_RETURN_N
export FQ_MUTANTS FQ_MUTANTS_SEED MUTANT_SEEDS
export FQ_FUZZ_SETS FQ_FUZZ_SEED SERIES_OUT EACH EACH_FROM EACH_X86 SUITE ARM64 ARM32 RECHECK
# CMD (make vm) is a shell command for the VM, run exactly as typed: make
# must not expand it ('echo $?' would become make's $?), so it is read with
# $(value) into a simply expanded variable, which export passes on as it is.
export RSNET_VM_CMD := $(value CMD)

.PHONY: all deps kernel modules check oracle mutants fuzz run vm bench profile lint series series-check clean
all: modules

deps:
	@bash $(T)/deps.sh
kernel: deps
	@bash $(T)/kernel.sh
modules: kernel
	@bash $(T)/modules.sh
check:
	@bash $(T)/check.sh
# The differential oracle alone, large: 1,000 seeds x 1,000 operations per
# implementation by default, in virtual time, and the timer_slack
# experiment over 10 virtual seconds, and the out-of-order flow's random
# run with 100,000 skbs (make check runs 60 x 1,000, 100 ms and 20,000).
oracle:
	@TESTS=fq_oracle.sh CHECK_VMS=1 ORACLE_SEEDS=$${ORACLE_SEEDS:-1000} \
		ORACLE_PSEEDS=$${ORACLE_PSEEDS:-20} ORACLE_OOO_RAND=$${ORACLE_OOO_RAND:-100000} \
		ORACLE_OPS=$${ORACLE_OPS:-1000} ORACLE_SLACK_MS=$${ORACLE_SLACK_MS:-10000} \
		kselftest_override_timeout=7200 bash $(T)/check.sh
# Every mutant of the Rust fq through the oracle (fq_mutants.sh): the
# table of mutants killed and survived, and the kill rate (make check runs
# a sample of 8, FQ_MUTANTS_SEED repeats one; FQ_MUTANTS="NAME..." runs
# those).
mutants:
	@TESTS=fq_mutants.sh CHECK_VMS=1 FQ_MUTANTS=$${FQ_MUTANTS:-all} \
		kselftest_override_timeout=7200 bash $(T)/check.sh
# The netlink fuzzer alone, large: 50,000 sets per implementation by
# default (make check runs 2,000), about 30 minutes; the kselftest
# runner's 30-minute limit per program is raised for it.
fuzz:
	@TESTS=fq_fuzz.sh CHECK_VMS=1 FQ_FUZZ_SETS=$${FQ_FUZZ_SETS:-50000} \
		kselftest_override_timeout=7200 bash $(T)/check.sh
run:
	@bash $(T)/run.sh
bench:
	@bash $(T)/bench.sh
profile:
	@bash $(T)/profile.sh
# make's own exit status is 0 or 2, so a failing command's status is
# printed as a last line ("[rsnet] command exited with status N") and make
# fails; tools/rsnet/vm.sh bash -c '...' exits with the status itself.
vm: modules
	@bash $(T)/vm.sh $(if $(RSNET_VM_CMD),bash -c "$$RSNET_VM_CMD") || \
		{ rc=$$?; echo "[rsnet] command exited with status $$rc"; exit $$rc; }
lint: kernel
	@bash $(T)/lint.sh
series: deps
	@bash $(T)/series.sh
series-check: deps
	@bash $(T)/series.sh check
clean:
	@find . -path ./.git -prune -o \( -name '*.o' -o -name '*.ko' -o -name '*.mod' \
		-o -name '*.mod.c' -o -name '.*.cmd' -o -name '*.rmeta' -o -name '*.d' \
		-o -name 'modules.order' -o -name 'Module.symvers' -o -name '*.bc' \) -type f -print0 | xargs -0 rm -f
