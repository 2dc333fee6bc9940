//! The kernel files the agent may write: one allow-list, checked on every write and every
//! restore ([`crate::fs::HostFs::write`] refuses anything else).
//!
//! A path is allowed when it matches one of [`ALLOWED`]'s patterns segment by segment:
//! a literal, `#` (a decimal number), `node#` (`node` and a number), or `{a|b|c}` (one of
//! the names). Two subtrees are open-ended because their layout is the kernel's, not
//! ours: the DAMON sysfs admin tree (every segment lower-case letters, digits and `_`) and
//! cgroup v2 directories (any names but `.` and `..`, ending in `memory.reclaim`). Config
//! keys never reach a path unchecked: DAMON module parameters must be among
//! [`DAMON_RECLAIM_PARAMS`] / [`DAMON_LRU_SORT_PARAMS`]. `HostFs` also refuses a path that
//! resolves through a symbolic link, so a pattern cannot be escaped by a link in a fake or
//! real tree.

/// The writable parameters every DAMON module defines through `mm/damon/modules-common.h`
/// (`DEFINE_DAMON_MODULES_MON_ATTRS_PARAMS`, `..._WMARKS_PARAMS`, the monitored region)
/// and `addr_unit` (6.18).
const DAMON_MODULE_COMMON_PARAMS: &[&str] = &[
    "wmarks_interval",
    "wmarks_high",
    "wmarks_mid",
    "wmarks_low",
    "sample_interval",
    "aggr_interval",
    "min_nr_regions",
    "max_nr_regions",
    "monitor_region_start",
    "monitor_region_end",
    "addr_unit",
];

/// `damon_reclaim`'s own writable parameters (`mm/damon/reclaim.c`, Linux 5.16–6.18; the
/// read-only statistics `nr_*`, `bytes_*`, `kdamond_pid` and the trigger `commit_inputs`
/// are not here: the agent never sets them from a config).
pub const DAMON_RECLAIM_PARAMS: &[&str] = &[
    "enabled",
    "min_age",
    "quota_ms",
    "quota_sz",
    "quota_reset_interval_ms",
    "quota_mem_pressure_us",
    "quota_autotune_feedback",
    "skip_anon",
];

/// `damon_lru_sort`'s own writable parameters (`mm/damon/lru_sort.c`, Linux 6.0–6.18).
pub const DAMON_LRU_SORT_PARAMS: &[&str] = &[
    "enabled",
    "hot_thres_access_freq",
    "cold_min_age",
    "quota_ms",
    "quota_reset_interval_ms",
    "active_mem_bp",
    "autotune_monitoring_intervals",
];

/// The known writable parameters of a DAMON module (`damon_reclaim`, `damon_lru_sort`):
/// its own and the common ones.
pub fn damon_module_params(module: &str) -> Option<Vec<&'static str>> {
    let own = match module {
        "damon_reclaim" => DAMON_RECLAIM_PARAMS,
        "damon_lru_sort" => DAMON_LRU_SORT_PARAMS,
        _ => return None,
    };
    Some(
        own.iter()
            .chain(DAMON_MODULE_COMMON_PARAMS)
            .copied()
            .collect(),
    )
}

/// Every file the agent writes, by pattern (see the module doc for the syntax).
pub const ALLOWED: &[&str] = &[
    "/proc/sys/kernel/numa_balancing",
    "/proc/sys/kernel/numa_balancing_promote_rate_limit_MBps",
    "/proc/sys/vm/{watermark_scale_factor|min_free_kbytes}",
    "/sys/kernel/debug/sched/numa_balancing/{scan_delay_ms|scan_period_min_ms|scan_period_max_ms|scan_size_mb|hot_threshold_ms}",
    "/sys/kernel/mm/numa/demotion_enabled",
    "/sys/kernel/mm/mempolicy/weighted_interleave/{node#|auto|__auto_type}",
    "/sys/kernel/mm/ksm/{run|merge_across_nodes|pages_to_scan|sleep_millisecs|max_page_sharing|stable_node_chains_prune_millisecs|use_zero_pages|smart_scan}",
    "/sys/kernel/mm/transparent_hugepage/enabled",
    "/sys/kernel/mm/lru_gen/enabled",
    // The profiler's idle flags (`tiermem trace profile`, crate::profiler): not a setting:
    // setting a page's idle flag changes no kernel decision (`page_idle_clear_pte_refs`
    // moves the accessed bits it clears into PG_young for reclaim), so nothing is restored.
    "/sys/kernel/mm/page_idle/bitmap",
    // The profiler's soft-dirty reset (`4`): write-protects the process's PTEs so that its
    // next write to each page sets the page's soft-dirty bit; not a setting either.
    "/proc/#/clear_refs",
];

const DAMON_ADMIN_TREE: &str = "/sys/kernel/mm/damon/admin/kdamonds/";
const CGROUP_ROOT: &str = "/sys/fs/cgroup/";
/// Deep enough for `kdamonds/N/contexts/N/schemes/N/quotas/goals/N/target_value`.
const DAMON_MAX_DEPTH: usize = 12;

/// Whether the agent may write `kpath` (an absolute kernel path, before the root is joined).
/// The error says why not.
pub fn check_write(kpath: &str) -> Result<(), String> {
    if !kpath.starts_with('/') || kpath.contains('\0') {
        return Err("not an absolute kernel path".into());
    }
    if let Some(rest) = kpath.strip_prefix(DAMON_ADMIN_TREE) {
        return damon_admin(rest);
    }
    if let Some(rest) = kpath.strip_prefix(CGROUP_ROOT) {
        return cgroup_reclaim(rest);
    }
    if let Some(rest) = kpath.strip_prefix("/sys/module/") {
        return damon_module(rest);
    }
    if ALLOWED.iter().any(|pat| matches(pat, kpath)) {
        Ok(())
    } else {
        Err("not a kernel file the agent writes (see docs/security.md for the list)".into())
    }
}

fn damon_admin(rest: &str) -> Result<(), String> {
    let segs: Vec<&str> = rest.split('/').collect();
    let ok = segs.len() <= DAMON_MAX_DEPTH
        && segs.iter().all(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        });
    if ok {
        Ok(())
    } else {
        Err("not a file of the DAMON sysfs admin tree".into())
    }
}

fn cgroup_reclaim(rest: &str) -> Result<(), String> {
    let segs: Vec<&str> = rest.split('/').collect();
    let dirs_ok = segs[..segs.len() - 1]
        .iter()
        .all(|s| !s.is_empty() && *s != "." && *s != "..");
    if dirs_ok && segs.last() == Some(&"memory.reclaim") {
        Ok(())
    } else {
        Err("under the cgroup mount the agent writes only a cgroup's memory.reclaim".into())
    }
}

fn damon_module(rest: &str) -> Result<(), String> {
    let mut it = rest.split('/');
    let (Some(module), Some("parameters"), Some(param), None) =
        (it.next(), it.next(), it.next(), it.next())
    else {
        return Err("not a module parameter file".into());
    };
    let Some(known) = damon_module_params(module) else {
        return Err(format!(
            "the agent sets parameters of damon_reclaim and damon_lru_sort only, not {module}"
        ));
    };
    if param == "commit_inputs" || known.contains(&param) {
        Ok(())
    } else {
        Err(format!("{param} is not a writable parameter of {module}"))
    }
}

/// One pattern against one path, segment by segment.
fn matches(pattern: &str, path: &str) -> bool {
    let (p, k): (Vec<&str>, Vec<&str>) = (pattern.split('/').collect(), path.split('/').collect());
    p.len() == k.len() && p.iter().zip(&k).all(|(p, k)| segment_matches(p, k))
}

fn segment_matches(pat: &str, seg: &str) -> bool {
    if let Some(alts) = pat.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
        return alts.split('|').any(|a| segment_matches(a, seg));
    }
    match pat.strip_suffix('#') {
        Some(prefix) => seg.strip_prefix(prefix).is_some_and(|n| {
            !n.is_empty() && n.len() <= 10 && n.bytes().all(|b| b.is_ascii_digit())
        }),
        None => pat == seg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agents_own_files_are_allowed() {
        for p in [
            "/proc/sys/kernel/numa_balancing",
            "/proc/sys/vm/min_free_kbytes",
            "/sys/kernel/debug/sched/numa_balancing/hot_threshold_ms",
            "/sys/kernel/mm/mempolicy/weighted_interleave/node12",
            "/sys/kernel/mm/mempolicy/weighted_interleave/auto",
            "/sys/kernel/mm/mempolicy/weighted_interleave/__auto_type",
            "/sys/kernel/mm/ksm/merge_across_nodes",
            "/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds",
            "/sys/kernel/mm/damon/admin/kdamonds/0/contexts/0/schemes/1/quotas/goals/0/target_value",
            "/sys/module/damon_reclaim/parameters/quota_sz",
            "/sys/module/damon_lru_sort/parameters/commit_inputs",
            "/sys/fs/cgroup/system.slice/db.service/memory.reclaim",
        ] {
            assert_eq!(check_write(p), Ok(()), "{p}");
        }
    }

    #[test]
    fn anything_else_is_refused() {
        for p in [
            "/etc/shadow",
            "/proc/sys/kernel/core_pattern",
            "/proc/sys/vm/../kernel/core_pattern",
            "/sys/kernel/mm/ksm/../../../../etc/passwd",
            "/sys/kernel/mm/mempolicy/weighted_interleave/node",
            "/sys/kernel/mm/mempolicy/weighted_interleave/node1x",
            "/sys/kernel/mm/damon/admin/kdamonds/../../../../../etc/passwd",
            "/sys/kernel/mm/damon/admin/kdamonds/0//state",
            "/sys/module/damon_reclaim/parameters/../../../../etc/passwd",
            "/sys/module/damon_reclaim/parameters/kdamond_pid",
            "/sys/module/kvm/parameters/halt_poll_ns",
            "/sys/fs/cgroup/../../etc/memory.reclaim",
            "/sys/fs/cgroup/db/cgroup.procs",
            "/sys/fs/cgroup/memory.reclaim/../cgroup.subtree_control",
            "relative/path",
        ] {
            assert!(check_write(p).is_err(), "{p}");
        }
    }

    #[test]
    fn module_parameter_lists_have_no_read_only_entries() {
        for p in DAMON_RECLAIM_PARAMS
            .iter()
            .chain(DAMON_LRU_SORT_PARAMS)
            .chain(DAMON_MODULE_COMMON_PARAMS)
        {
            assert!(!p.starts_with("nr_") && !p.starts_with("bytes_") && *p != "kdamond_pid");
        }
    }
}
