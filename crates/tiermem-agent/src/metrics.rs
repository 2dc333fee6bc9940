//! Prometheus text exposition on a loopback address, and the metric families.
//!
//! The agent loop renders a snapshot each tick ([`render`]); a small listener thread serves
//! the latest snapshot to any `GET` (observers apart from deciders: serving never touches
//! the controllers).

use crate::controller::ControllerStats;
use crate::fs::HostFs;
use crate::Error;
use std::fmt::Write;
use std::io::{Read, Write as IoWrite};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// `/proc/vmstat` counters exported as `tiermem_vmstat_total{counter=...}`.
pub const VMSTAT_COUNTERS: [&str; 12] = [
    "pgpromote_success",
    "pgpromote_candidate",
    "pgdemote_kswapd",
    "pgdemote_direct",
    "pgdemote_khugepaged",
    "numa_pte_updates",
    "numa_hint_faults",
    "numa_hint_faults_local",
    "numa_pages_migrated",
    "pgmigrate_success",
    "pgmigrate_fail",
    "pswpout",
];

/// The served snapshot.
#[derive(Clone, Default)]
pub struct Snapshot(pub Arc<Mutex<String>>);

impl Snapshot {
    pub fn set(&self, s: String) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = s;
    }
    pub fn get(&self) -> String {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Bind first (so a busy port is an error before anything is changed), then serve.
pub fn serve(listen: &str, snap: Snapshot) -> Result<std::net::SocketAddr, Error> {
    let l = TcpListener::bind(listen)
        .map_err(|e| Error::Other(format!("metrics: cannot listen on {listen}: {e}")))?;
    let addr = l.local_addr().map_err(|e| Error::Other(e.to_string()))?;
    std::thread::Builder::new()
        .name("tiermem-metrics".into())
        .spawn(move || {
            for conn in l.incoming() {
                let Ok(mut c) = conn else { continue };
                let _ = c.set_read_timeout(Some(std::time::Duration::from_secs(2)));
                let mut buf = [0u8; 1024];
                let _ = c.read(&mut buf);
                let body = snap.get();
                let _ = write!(
                    c,
                    "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\r\n{}",
                    body.len(),
                    body
                );
            }
        })
        .map_err(|e| Error::Other(format!("metrics thread: {e}")))?;
    Ok(addr)
}

/// CPU time (user + system) of this process, in seconds (`getrusage(RUSAGE_SELF)`).
pub fn self_cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Parse `/proc/vmstat` (`name value` lines).
pub fn parse_vmstat(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect()
}

/// Everything the loop knows this tick.
pub struct MetricsInput<'a> {
    pub controller: Option<&'a ControllerStats>,
    pub targets: usize,
    /// (purpose, scheme index, stats) of the agent's kdamonds.
    pub schemes: &'a [(String, usize, crate::damon::SchemeStats)],
    pub cgroup_reclaimed_bytes: u64,
    pub ticks: u64,
}

/// Render the exposition text.
pub fn render(fs: &HostFs, inp: &MetricsInput) -> String {
    let mut o = String::new();
    // Node usage per tier.
    if let Ok(nodes) = crate::host::read_nodes(fs) {
        let tiers = crate::host::read_tiers(fs).unwrap_or_default();
        let _ = writeln!(o, "# HELP tiermem_node_memory_bytes Node memory (MemTotal/MemFree of nodeN/meminfo).\n# TYPE tiermem_node_memory_bytes gauge");
        for n in &nodes {
            let tier = tiers
                .iter()
                .find(|t| t.nodes.contains(&n.id))
                .map(|t| t.id.to_string())
                .unwrap_or_else(|| "none".into());
            let _ = writeln!(
                o,
                "tiermem_node_memory_bytes{{node=\"{}\",tier=\"{tier}\",kind=\"total\"}} {}",
                n.id, n.mem_total_bytes
            );
            let _ = writeln!(
                o,
                "tiermem_node_memory_bytes{{node=\"{}\",tier=\"{tier}\",kind=\"free\"}} {}",
                n.id, n.mem_free_bytes
            );
            let _ = writeln!(
                o,
                "tiermem_node_memory_bytes{{node=\"{}\",tier=\"{tier}\",kind=\"used\"}} {}",
                n.id,
                n.mem_total_bytes.saturating_sub(n.mem_free_bytes)
            );
        }
    }
    if let Ok(Some(v)) = fs.read_opt("/proc/vmstat") {
        let _ = writeln!(o, "# HELP tiermem_vmstat_total Kernel promotion/demotion/migration counters from /proc/vmstat (pages).\n# TYPE tiermem_vmstat_total counter");
        for (k, v) in parse_vmstat(&v) {
            if VMSTAT_COUNTERS.contains(&k.as_str()) {
                let _ = writeln!(o, "tiermem_vmstat_total{{counter=\"{k}\"}} {v}");
            }
        }
    }
    if let Some(c) = inp.controller {
        let _ = writeln!(o, "# HELP tiermem_controller_bytes_total User-space tiering controller decisions (bytes).\n# TYPE tiermem_controller_bytes_total counter");
        for (k, v) in [
            ("candidate", c.candidate_bytes),
            ("promoted", c.promoted_bytes),
            ("promote_failed", c.promote_failed_bytes),
            ("rate_limited", c.rate_limited_bytes),
            ("headroom_skipped", c.headroom_skipped_bytes),
            ("demoted", c.demoted_bytes),
        ] {
            let _ = writeln!(o, "tiermem_controller_bytes_total{{decision=\"{k}\"}} {v}");
        }
        let _ = writeln!(o, "# TYPE tiermem_controller_hot_threshold_permil gauge\ntiermem_controller_hot_threshold_permil {}", c.threshold_permil);
        let _ = writeln!(o, "# TYPE tiermem_controller_threshold_adjustments_total counter\ntiermem_controller_threshold_adjustments_total {}", c.threshold_adjustments);
        let _ = writeln!(o, "# TYPE tiermem_controller_demote_quota_exceeded_total counter\ntiermem_controller_demote_quota_exceeded_total {}", c.demote_quota_exceeded);
        let _ = writeln!(o, "# HELP tiermem_damon_regions DAMON regions of the controller's targets in the last tick.\n# TYPE tiermem_damon_regions gauge");
        let _ = writeln!(
            o,
            "tiermem_damon_regions{{class=\"hot\"}} {}",
            c.hot_regions
        );
        let _ = writeln!(
            o,
            "tiermem_damon_regions{{class=\"cold\"}} {}",
            c.cold_regions
        );
        let _ = writeln!(
            o,
            "# TYPE tiermem_damon_monitored_bytes gauge\ntiermem_damon_monitored_bytes {}",
            c.monitored_bytes
        );
    }
    let _ = writeln!(
        o,
        "# TYPE tiermem_targets gauge\ntiermem_targets {}",
        inp.targets
    );
    if !inp.schemes.is_empty() {
        let _ = writeln!(o, "# HELP tiermem_damos_bytes_total DAMOS scheme statistics of the agent's kdamonds.\n# TYPE tiermem_damos_bytes_total counter");
        for (p, s, st) in inp.schemes {
            let _ = writeln!(
                o,
                "tiermem_damos_bytes_total{{kdamond=\"{p}\",scheme=\"{s}\",stat=\"tried\"}} {}",
                st.sz_tried
            );
            let _ = writeln!(
                o,
                "tiermem_damos_bytes_total{{kdamond=\"{p}\",scheme=\"{s}\",stat=\"applied\"}} {}",
                st.sz_applied
            );
            let _ = writeln!(
                o,
                "tiermem_damos_quota_exceeds_total{{kdamond=\"{p}\",scheme=\"{s}\"}} {}",
                st.qt_exceeds
            );
        }
    }
    let _ = writeln!(o, "# TYPE tiermem_cgroup_reclaimed_bytes_total counter\ntiermem_cgroup_reclaimed_bytes_total {}", inp.cgroup_reclaimed_bytes);
    let _ = writeln!(o, "# HELP tiermem_agent_cpu_seconds_total CPU time of the agent itself.\n# TYPE tiermem_agent_cpu_seconds_total counter");
    let _ = writeln!(
        o,
        "tiermem_agent_cpu_seconds_total {:.6}",
        self_cpu_seconds()
    );
    let _ = writeln!(
        o,
        "# TYPE tiermem_agent_ticks_total counter\ntiermem_agent_ticks_total {}",
        inp.ticks
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_node_vmstat_and_controller_families() {
        let t = crate::host::fake_two_node();
        let c = ControllerStats {
            promoted_bytes: 8192,
            threshold_permil: 500,
            ..Default::default()
        };
        let s = render(
            &t.fs(),
            &MetricsInput {
                controller: Some(&c),
                targets: 1,
                schemes: &[],
                cgroup_reclaimed_bytes: 0,
                ticks: 3,
            },
        );
        assert!(
            s.contains(
                "tiermem_node_memory_bytes{node=\"1\",tier=\"22\",kind=\"free\"} 1024000000"
            ),
            "{s}"
        );
        assert!(s.contains("tiermem_vmstat_total{counter=\"pgpromote_success\"} 0"));
        assert!(s.contains("tiermem_controller_bytes_total{decision=\"promoted\"} 8192"));
        assert!(s.contains("tiermem_agent_cpu_seconds_total"));
    }

    #[test]
    fn endpoint_serves_the_snapshot() {
        let snap = Snapshot::default();
        snap.set("tiermem_up 1\n".into());
        let addr = serve("127.0.0.1:0", snap).unwrap();
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut s = String::new();
        c.read_to_string(&mut s).unwrap();
        assert!(
            s.starts_with("HTTP/1.0 200 OK") && s.ends_with("tiermem_up 1\n"),
            "{s}"
        );
    }
}
