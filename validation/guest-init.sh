#!/bin/busybox sh
# /init of a recording VM (validation/record.sh): run the scenario's workload with
# `tiermem workload run`, then print the recording as base64 between markers.
. /bin/guest-boot.sh
echo "TIERMEM-KERNEL $(uname -r)"
cat /sys/kernel/mm/lru_gen/enabled 2>/dev/null | sed 's/^/TIERMEM-LRU-GEN /'
[ -x /scenario/setup.sh ] && /scenario/setup.sh
mkdir -p /tmp/out
# tiermem_trace on the kernel command line (record.sh --trace): trace every task_numa_work
# call with its duration (function_graph, depth 1), the scanner's VMA skips, kswapd's wakes,
# sleeps and reclaim batches, ksmd's scans and migrations, for model work.
if grep -qw tiermem_trace /proc/cmdline; then
  T=/sys/kernel/tracing
  [ -d $T/events ] || T=/sys/kernel/debug/tracing
  echo 8192 > $T/buffer_size_kb
  echo task_numa_work > $T/set_ftrace_filter
  echo 1 > $T/max_graph_depth
  echo function_graph > $T/current_tracer
  echo funcgraph-abstime > $T/trace_options
  echo funcgraph-proc > $T/trace_options
  for e in sched/sched_skip_vma_numa vmscan/mm_vmscan_kswapd_wake vmscan/mm_vmscan_kswapd_sleep \
    vmscan/mm_vmscan_wakeup_kswapd vmscan/mm_vmscan_lru_shrink_inactive ksm/ksm_start_scan \
    ksm/ksm_stop_scan migrate/mm_migrate_pages; do
    echo 1 > $T/events/$e/enable 2>/dev/null
  done
  echo 1 > $T/tracing_on
fi
# tiermem_trace_damon (record.sh --trace-damon): DAMOS applications, every region at every
# aggregation (address, accesses, age), the pages reclaim writes out, and every switch away
# from a kdamond with its stack (where it waits).
if grep -q tiermem_trace_damon /proc/cmdline; then
  T=/sys/kernel/tracing
  [ -d $T/events ] || T=/sys/kernel/debug/tracing
  echo 65536 > $T/buffer_size_kb
  for e in damon/damos_before_apply damon/damon_aggregated vmscan/mm_vmscan_write_folio vmscan/mm_vmscan_kswapd_wake; do
    echo 1 > $T/events/$e/enable 2>/dev/null
  done
  echo 'prev_comm ~ "kdamond*"' > $T/events/sched/sched_switch/filter
  echo 'stacktrace if prev_comm ~ "kdamond*"' > $T/events/sched/sched_switch/trigger
  echo 1 > $T/events/sched/sched_switch/enable
  echo 1 > $T/tracing_on
fi
# tiermem_trace_reclaim (record.sh --trace-reclaim): who reclaims and when. kswapd's wakes,
# sleeps and batches, direct reclaim's begin/end, migratetype fallbacks (which boost the
# watermarks) and every context switch (how much CPU the workload's thread gets).
if grep -q tiermem_trace_reclaim /proc/cmdline; then
  T=/sys/kernel/tracing
  [ -d $T/events ] || T=/sys/kernel/debug/tracing
  echo 32768 > $T/buffer_size_kb
  for e in vmscan/mm_vmscan_kswapd_wake vmscan/mm_vmscan_kswapd_sleep vmscan/mm_vmscan_wakeup_kswapd \
    vmscan/mm_vmscan_direct_reclaim_begin vmscan/mm_vmscan_direct_reclaim_end \
    vmscan/mm_vmscan_lru_shrink_inactive vmscan/mm_vmscan_lru_shrink_active \
    vmscan/mm_vmscan_throttled kmem/mm_page_alloc_extfrag sched/sched_switch; do
    echo 1 > $T/events/$e/enable 2>/dev/null
  done
  echo 1 > $T/tracing_on
fi
if tiermem workload run /scenario/scenario.toml --out /tmp/out --progress 10; then
  cat /proc/zoneinfo > /tmp/out/zoneinfo-end.txt
  grep -q tiermem_trace /proc/cmdline && { echo 0 > $T/tracing_on; cat $T/trace > /tmp/out/trace.txt; }
  echo "TIERMEM-OUT-BEGIN"
  tar czf - -C /tmp/out . | base64
  echo "TIERMEM-OUT-END"
else
  echo "TIERMEM-RUN-FAILED $?"
fi
poweroff -f
