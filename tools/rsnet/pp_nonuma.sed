# The benchmark's build of net/core/page_pool_rs.rs without C's NUMA rule
# (Kbuild: page_pool_rs_nonuma.rs), to measure what the rule buys.
s/^const NUMA_CHECK: bool = true;$/const NUMA_CHECK: bool = false;/
s/recycling now runs in Rust\\n/recycling now runs in Rust, without the NUMA rule\\n/
