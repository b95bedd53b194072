#!/bin/bash
# Runs inside the test VM for `make run`: a short tour of what rsnet adds,
# each step shown as the command a user types and what it printed.
set -u
fail=0
# run CMD...: show and run a command; a failure makes the tour fail.
run() {
	printf '\n$ %s\n' "$*"
	if ! "$@" 2>&1; then echo "  (failed)"; fail=1; fi
}
# run_err CMD...: show a command that is meant to be refused.
run_err() {
	printf '\n$ %s\n' "$*"
	if "$@" 2>&1; then echo "  (unexpectedly accepted)"; fail=1; fi
}

echo "== rsnet test kernel: $(uname -r), $(nproc) CPUs, NUMA nodes: $(ls -d /sys/devices/system/node/node* | wc -l)"

echo
echo "== sysctl abstraction (samples/rust/rust_sysctl.rs)"
run modprobe rust_sysctl
run sysctl rsnet.sample
run sysctl -w rsnet.sample.value=42
run_err sysctl -w rsnet.sample.value=5000
run_err sysctl -w rsnet.sample.value=7
run sysctl rsnet.sample
run modprobe -r rust_sysctl
dmesg | grep -E 'rust_sysctl' | sed 's/^/  dmesg: /'

echo
echo "== sch_fq in Rust (net/sched/sch_fq_rs.rs): the fq qdisc, driven by tc"
echo "install sch_fq /bin/false" >/etc/modprobe.d/rsnet-no-c-fq.conf
run modprobe sch_fq_rs
run ip link add fqdemo type dummy
run ip link set fqdemo up
run tc qdisc add dev fqdemo root fq timer_slack 10us maxrate 100mbit
run tc qdisc show dev fqdemo
run_err tc qdisc change dev fqdemo root fq initial_quantum 0x80000000
run tc -s qdisc show dev fqdemo
printf '\n$ cat /sys/module/sch_fq_rs/refcnt   # the Rust module holds the qdisc\n'
cat /sys/module/sch_fq_rs/refcnt
run tc qdisc del dev fqdemo root
run modprobe -r sch_fq_rs
rm -f /etc/modprobe.d/rsnet-no-c-fq.conf

echo
echo "== tcp_tx_skb_cache (net/ipv4/tcp_tx_skb_cache.rs)"
run modprobe tcp_tx_skb_cache
run sysctl net.ipv4.tcp_tx_skb_cache
run sysctl -w net.ipv4.tcp_tx_skb_cache=1
run_err sysctl -w net.ipv4.tcp_tx_skb_cache=2
python3 "$RSNET_TOP/tools/testing/selftests/rsnet/tcp_xfer.py" serve 127.0.0.1 5201 &
srv=$!
sleep 1
run python3 "$RSNET_TOP/tools/testing/selftests/rsnet/tcp_xfer.py" send 127.0.0.1 5201 send 1048576 4194304
kill $srv
run sysctl rsnet.tcp_tx_skb_cache
run sysctl -w net.ipv4.tcp_tx_skb_cache=0
run modprobe -r tcp_tx_skb_cache

echo
echo "== page_pool recycling in Rust (net/core/page_pool_rs.rs)"
run modprobe page_pool_rs
dmesg | grep -E 'page_pool_rs|recycling now runs in Rust' | tail -1 | sed 's/^/  dmesg: /'
printf '\n$ modprobe page_pool_test path=rust   # its KUnit suite runs as it loads, on the Rust path\n'
dmesg -C
# path= is the label the suite prints; page_pool_rs's module is the fact.
if modprobe page_pool_test path="$([ -e /sys/module/page_pool_rs ] && echo rust || echo c)"; then
	out=$(dmesg | sed 's/^\[[^]]*\] \{0,1\}//')
	grep -E '^ *# (hook|page_pool_recycle: pass)|^(not )?ok [0-9]+ page_pool_recycle$' <<<"$out" |
		sed 's/^ */  /'
	grep -Eq '^ok [0-9]+ page_pool_recycle$' <<<"$out" || fail=1
	grep -Eq '# hook: rust$' <<<"$out" || fail=1
	modprobe -r page_pool_test
else
	echo "  (failed)"; fail=1
fi
run modprobe -r page_pool_rs

echo
if [ $fail = 0 ]; then echo "== rsnet: all steps behaved as expected"; else echo "== rsnet: some steps FAILED"; fi
exit $fail
