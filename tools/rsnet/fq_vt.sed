# The oracle's build of net/sched/sch_fq_rs.rs (Kbuild: sch_fq_rs_vt.rs;
# mutants.py does the same to each mutant): a flow table limit that the
# oracle's fill test reaches, 4,096 flows, instead of the table's most.
s/^const FQ_MAX_FLOWS: u32 = .*;$/const FQ_MAX_FLOWS: u32 = 4096;/
