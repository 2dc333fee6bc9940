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

/// Connections served at once; more get `503` at once (a scrape retries).
pub const MAX_CONNECTIONS: usize = 16;
/// How long a client may take to send its request, and to take the response.
pub const CLIENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// The longest request head read (Prometheus sends a few hundred bytes).
const MAX_REQUEST_BYTES: usize = 8 << 10;

/// Bind first (so a busy port is an error before anything is changed), then serve: each
/// connection on its own thread (at most [`MAX_CONNECTIONS`]), with [`CLIENT_TIMEOUT`] for
/// reading the request and writing the response, so an idle or slow client never stalls
/// another scrape.
pub fn serve(listen: &str, snap: Snapshot) -> Result<std::net::SocketAddr, Error> {
    let l = TcpListener::bind(listen)
        .map_err(|e| Error::Other(format!("metrics: cannot listen on {listen}: {e}")))?;
    let addr = l.local_addr().map_err(|e| Error::Other(e.to_string()))?;
    let active = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    std::thread::Builder::new()
        .name("tiermem-metrics".into())
        .spawn(move || {
            use std::sync::atomic::Ordering::SeqCst;
            for conn in l.incoming() {
                let Ok(mut c) = conn else { continue };
                let _ = c.set_read_timeout(Some(CLIENT_TIMEOUT));
                let _ = c.set_write_timeout(Some(CLIENT_TIMEOUT));
                if active.fetch_add(1, SeqCst) >= MAX_CONNECTIONS {
                    active.fetch_sub(1, SeqCst);
                    let _ = respond(&mut c, "503 Service Unavailable", "too many connections\n");
                    continue;
                }
                let (snap, done) = (snap.clone(), active.clone());
                let spawned = std::thread::Builder::new()
                    .name("tiermem-metrics-conn".into())
                    .spawn(move || {
                        let _ = handle(&mut c, &snap);
                        done.fetch_sub(1, SeqCst);
                    });
                if spawned.is_err() {
                    // The closure (and its decrement) never ran.
                    active.fetch_sub(1, SeqCst);
                }
            }
        })
        .map_err(|e| Error::Other(format!("metrics thread: {e}")))?;
    Ok(addr)
}

/// One request: `GET /metrics` (or `/`) gets the snapshot, anything else an error status.
fn handle(c: &mut std::net::TcpStream, snap: &Snapshot) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = c.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
        if head.len() > MAX_REQUEST_BYTES {
            return respond(
                c,
                "431 Request Header Fields Too Large",
                "request too large\n",
            );
        }
    }
    let line = String::from_utf8_lossy(&head);
    let mut parts = line.split_whitespace();
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(path)) if path == "/metrics" || path == "/" => {
            respond(c, "200 OK", &snap.get())
        }
        (Some("GET"), Some(_)) => respond(c, "404 Not Found", "the metrics are at /metrics\n"),
        _ => respond(c, "405 Method Not Allowed", "GET /metrics\n"),
    }
}

fn respond(c: &mut std::net::TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    write!(
        c,
        "HTTP/1.0 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
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
    node_memory(&mut o, fs);
    vmstat(&mut o, fs);
    if let Some(c) = inp.controller {
        controller(&mut o, c);
    }
    single(
        &mut o,
        "tiermem_targets",
        "gauge",
        "Processes the controller manages.",
        inp.targets,
    );
    if !inp.schemes.is_empty() {
        damos(&mut o, inp.schemes);
    }
    single(
        &mut o,
        "tiermem_cgroup_reclaimed_bytes_total",
        "counter",
        "Bytes asked of cgroups' memory.reclaim.",
        inp.cgroup_reclaimed_bytes,
    );
    single(
        &mut o,
        "tiermem_agent_cpu_seconds_total",
        "counter",
        "CPU time of the agent itself.",
        format!("{:.6}", self_cpu_seconds()),
    );
    single(
        &mut o,
        "tiermem_agent_ticks_total",
        "counter",
        "Iterations of the agent's loop.",
        inp.ticks,
    );
    o
}

/// `tiermem_node_memory_bytes`: each node's total, free and used memory with its tier.
fn node_memory(o: &mut String, fs: &HostFs) {
    let Ok(nodes) = crate::host::read_nodes(fs) else {
        return;
    };
    let tiers = crate::host::read_tiers(fs).unwrap_or_default();
    let mut rows = Vec::new();
    for n in &nodes {
        let tier = tiers
            .iter()
            .find(|t| t.nodes.contains(&n.id))
            .map(|t| t.id.to_string())
            .unwrap_or_else(|| "none".into());
        for (kind, v) in [
            ("total", n.mem_total_bytes),
            ("free", n.mem_free_bytes),
            ("used", n.mem_total_bytes.saturating_sub(n.mem_free_bytes)),
        ] {
            rows.push((
                format!("node=\"{}\",tier=\"{tier}\",kind=\"{kind}\"", n.id),
                v.to_string(),
            ));
        }
    }
    family(
        o,
        "tiermem_node_memory_bytes",
        "gauge",
        "Node memory (MemTotal/MemFree of nodeN/meminfo).",
        &rows,
    );
}

/// `tiermem_vmstat_total`: the promotion, demotion and migration counters.
fn vmstat(o: &mut String, fs: &HostFs) {
    let Ok(Some(v)) = fs.read_opt("/proc/vmstat") else {
        return;
    };
    let rows: Vec<_> = parse_vmstat(&v)
        .into_iter()
        .filter(|(k, _)| VMSTAT_COUNTERS.contains(&k.as_str()))
        .map(|(k, v)| (format!("counter=\"{k}\""), v.to_string()))
        .collect();
    family(
        o,
        "tiermem_vmstat_total",
        "counter",
        "Kernel promotion/demotion/migration counters from /proc/vmstat (pages).",
        &rows,
    );
}

/// The user-space controller's decisions, threshold and DAMON view.
fn controller(o: &mut String, c: &ControllerStats) {
    let rows: Vec<_> = [
        ("candidate", c.candidate_bytes),
        ("promoted", c.promoted_bytes),
        ("promote_failed", c.promote_failed_bytes),
        ("rate_limited", c.rate_limited_bytes),
        ("headroom_skipped", c.headroom_skipped_bytes),
        ("demoted", c.demoted_bytes),
    ]
    .iter()
    .map(|(k, v)| (format!("decision=\"{k}\""), v.to_string()))
    .collect();
    family(
        o,
        "tiermem_controller_bytes_total",
        "counter",
        "User-space tiering controller decisions (bytes).",
        &rows,
    );
    single(
        o,
        "tiermem_controller_hot_threshold_permil",
        "gauge",
        "The controller's hot threshold (permil of the maximum access count).",
        c.threshold_permil,
    );
    single(
        o,
        "tiermem_controller_threshold_adjustments_total",
        "counter",
        "Automatic hot-threshold adjustments.",
        c.threshold_adjustments,
    );
    single(
        o,
        "tiermem_controller_demote_quota_exceeded_total",
        "counter",
        "Demotion intervals that used up the demotion quota.",
        c.demote_quota_exceeded,
    );
    let rows = vec![
        ("class=\"hot\"".to_string(), c.hot_regions.to_string()),
        ("class=\"cold\"".to_string(), c.cold_regions.to_string()),
    ];
    family(
        o,
        "tiermem_damon_regions",
        "gauge",
        "DAMON regions of the controller's targets in the last tick.",
        &rows,
    );
    single(
        o,
        "tiermem_damon_monitored_bytes",
        "gauge",
        "Bytes DAMON monitors for the controller.",
        c.monitored_bytes,
    );
}

/// The DAMOS statistics of the agent's kdamonds.
fn damos(o: &mut String, schemes: &[(String, usize, crate::damon::SchemeStats)]) {
    let mut bytes = Vec::new();
    let mut exceeds = Vec::new();
    for (p, s, st) in schemes {
        let l = format!("kdamond=\"{}\",scheme=\"{s}\"", escape_label(p));
        bytes.push((format!("{l},stat=\"tried\""), st.sz_tried.to_string()));
        bytes.push((format!("{l},stat=\"applied\""), st.sz_applied.to_string()));
        exceeds.push((l, st.qt_exceeds.to_string()));
    }
    family(
        o,
        "tiermem_damos_bytes_total",
        "counter",
        "DAMOS scheme statistics of the agent's kdamonds.",
        &bytes,
    );
    family(
        o,
        "tiermem_damos_quota_exceeds_total",
        "counter",
        "Times a DAMOS scheme's quota was exceeded.",
        &exceeds,
    );
}

/// One metric family: HELP, TYPE, then its samples (`labels` without braces).
fn family(o: &mut String, name: &str, kind: &str, help: &str, rows: &[(String, String)]) {
    let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
    for (labels, v) in rows {
        let _ = writeln!(o, "{name}{{{labels}}} {v}");
    }
}

/// A family of one unlabelled sample.
fn single(o: &mut String, name: &str, kind: &str, help: &str, v: impl std::fmt::Display) {
    let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
}

/// A label value as the exposition format wants it (backslash, quote and newline escaped).
fn escape_label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exposition of the fake two-node host with one target and `c`'s statistics.
    fn render_fake(
        c: &ControllerStats,
        schemes: &[(String, usize, crate::damon::SchemeStats)],
        ticks: u64,
    ) -> String {
        let t = crate::host::fake_two_node();
        render(
            &t.fs(),
            &MetricsInput {
                controller: Some(c),
                targets: 1,
                schemes,
                cgroup_reclaimed_bytes: 0,
                ticks,
            },
        )
    }

    #[test]
    fn renders_node_vmstat_and_controller_families() {
        let c = ControllerStats {
            promoted_bytes: 8192,
            threshold_permil: 500,
            ..Default::default()
        };
        let s = render_fake(&c, &[], 3);
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

    /// The rendered text is valid Prometheus exposition: every family has HELP and TYPE
    /// once, before its samples, and appears in one block; checked by `promtool check
    /// metrics` as well when it is installed (CI installs Debian's `prometheus`).
    #[test]
    fn exposition_is_valid_for_prometheus() {
        let c = ControllerStats::default();
        let st = crate::damon::SchemeStats::default();
        let schemes = vec![
            ("tiering-1".to_string(), 0usize, st),
            ("own \"x\"".to_string(), 1, st),
        ];
        let s = render_fake(&c, &schemes, 3);
        let mut seen = std::collections::BTreeSet::new();
        let mut current = String::new();
        for line in s.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let name = rest.split(' ').next().unwrap().to_string();
                assert!(seen.insert(name.clone()), "family {name} twice");
                current = name;
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                assert!(
                    rest.starts_with(&format!("{current} ")),
                    "TYPE without HELP: {line}"
                );
            } else {
                let name = line.split(['{', ' ']).next().unwrap();
                assert_eq!(name, current, "sample outside its family: {line}");
                let v = line.rsplit(' ').next().unwrap();
                assert!(v.parse::<f64>().is_ok(), "value of {line}");
            }
        }
        let Ok(mut p) = std::process::Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
        else {
            eprintln!("promtool not installed: checked by the built-in rules only");
            return;
        };
        p.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
        let out = p.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "promtool: {}{}\n{s}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// An idle client holding a connection open does not stall a scrape.
    #[test]
    fn an_idle_connection_does_not_block_a_scrape() {
        let snap = Snapshot::default();
        snap.set("tiermem_up 1\n".into());
        let addr = serve("127.0.0.1:0", snap).unwrap();
        let _idle = std::net::TcpStream::connect(addr).unwrap();
        let t0 = std::time::Instant::now();
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut s = String::new();
        c.read_to_string(&mut s).unwrap();
        assert!(s.ends_with("tiermem_up 1\n"), "{s}");
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(1),
            "{:?}",
            t0.elapsed()
        );
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.write_all(b"POST /metrics HTTP/1.0\r\n\r\n").unwrap();
        let mut s = String::new();
        c.read_to_string(&mut s).unwrap();
        assert!(s.starts_with("HTTP/1.0 405"), "{s}");
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

    /// Every query of `deploy/grafana-dashboard.json` names a family the agent exports,
    /// and every label it selects on or shows in a legend is one of that family's labels.
    #[test]
    fn the_dashboard_queries_what_the_agent_exports() {
        let c = ControllerStats::default();
        let schemes = vec![(
            "reclaim".to_string(),
            0usize,
            crate::damon::SchemeStats::default(),
        )];
        let text = render_fake(&c, &schemes, 1);
        // family -> the label names of its samples
        let mut labels: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
            Default::default();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let name: String = line
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let set = labels.entry(name).or_default();
            if let Some(rest) = line.split_once('{').map(|x| x.1) {
                for kv in rest.split('}').next().unwrap_or("").split(',') {
                    if let Some((k, _)) = kv.split_once('=') {
                        set.insert(k.to_string());
                    }
                }
            }
        }
        let dash: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../deploy/grafana-dashboard.json"
            ))
            .unwrap(),
        )
        .unwrap();
        let mut checked = 0;
        for panel in dash["panels"].as_array().unwrap() {
            for target in panel["targets"].as_array().unwrap() {
                let expr = target["expr"].as_str().unwrap();
                let legend = target["legendFormat"].as_str().unwrap_or("");
                let metrics: Vec<&str> = expr
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|w| w.starts_with("tiermem_"))
                    .collect();
                assert_eq!(metrics.len(), 1, "one family per query: {expr}");
                let m = metrics[0];
                let have = labels
                    .get(m)
                    .unwrap_or_else(|| panic!("{m} (in {expr:?}) is not exported:\n{text}"));
                // Labels selected on ({k="v"} / {k=~"v"}) and shown ({{k}}).
                let selected = expr
                    .split('{')
                    .skip(1)
                    .flat_map(|x| x.split('}').next().unwrap_or("").split(','))
                    .filter_map(|kv| kv.split(['=', '!']).next())
                    .map(str::trim)
                    .filter(|k| !k.is_empty())
                    .map(String::from);
                let shown = legend
                    .split("{{")
                    .skip(1)
                    .filter_map(|x| x.split("}}").next())
                    .map(String::from);
                for l in selected.chain(shown) {
                    assert!(
                        have.contains(&l),
                        "{m} has no label {l:?} (labels {have:?})"
                    );
                }
                checked += 1;
            }
        }
        assert!(checked >= 10, "{checked} queries");
    }
}
