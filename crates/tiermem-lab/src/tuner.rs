//! The weight tuner: given a machine and a workload whose policy is weighted interleave,
//! find the interleave weights that maximise a throughput metric by simulating small
//! integer weights, and compare them with the weights a 6.16+ kernel derives from node
//! bandwidth (`auto`, [`tiermem_core::interleave::weights_from_bandwidth`]).
//!
//! Search space: the policy's fastest node (highest `min(read, write)` bandwidth) gets
//! weight `k` for `k = 1..=max_weight`, every other node of the policy weight 1 — the
//! shape of seed 002's "~9:1" — plus the `auto` weights. Each candidate is a full
//! simulation of the config with `kernel.weighted_interleave.weights` set (6.16 semantics,
//! manual mode); candidates run in parallel on the available cores.

use crate::experiment::metric;
use tiermem_core::config::{SimConfig, WorkloadConfig};
use tiermem_core::interleave::{node_perf_mbps, weights_from_bandwidth, WeightSemantics};
use tiermem_core::mempolicy::{MemPolicy, PolicyMode};
use tiermem_core::topology::Topology;
use tiermem_core::ConfigError;
use tiermem_sim::SimError;

/// One evaluated weight vector.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Candidate {
    /// Weight per node (node order; nodes outside the policy keep 1).
    pub weights: Vec<u8>,
    /// The fastest node's weight (the sweep coordinate); `None` for the auto weights.
    pub k: Option<u8>,
    /// The metric's value.
    pub value: f64,
}

/// What the tuner found.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TuneResult {
    pub metric: String,
    /// The policy's nodes.
    pub nodes: Vec<u8>,
    /// Every candidate of the sweep, in `k` order.
    pub sweep: Vec<Candidate>,
    /// The best candidate of the sweep.
    pub best: Candidate,
    /// The bandwidth-derived (`auto`) weights and their value.
    pub auto: Candidate,
}

/// The weighted-interleave policy of workload `w` (task policy, else the first mbind).
pub fn workload_policy(cfg: &SimConfig, w: usize) -> Option<MemPolicy> {
    let (policy, mbind): (&MemPolicy, &[tiermem_core::config::MbindConfig]) =
        match cfg.workloads.get(w)? {
            WorkloadConfig::Stream(s) => (&s.policy, &s.mbind),
            WorkloadConfig::Mlc(m) => (&m.policy, &m.mbind),
            WorkloadConfig::Xsbench(x) => (&x.policy, &x.mbind),
            WorkloadConfig::Pmbench(p) => (&p.policy, &[]),
            WorkloadConfig::Parsec(_)
            | WorkloadConfig::Hotregions(_)
            | WorkloadConfig::VmGuest(_)
            | WorkloadConfig::Trace(_)
            | WorkloadConfig::Synthetic(_) => return None,
        };
    if policy.mode == PolicyMode::WeightedInterleave {
        return Some(policy.clone());
    }
    mbind
        .iter()
        .find(|m| m.policy.mode == PolicyMode::WeightedInterleave)
        .map(|m| m.policy.clone())
}

/// The sweep's weight vectors for a policy's node set on a machine: the fastest node of
/// the set at `k`, the others at 1, for `k` in `ks`.
pub fn candidate_weights(topo: &Topology, nodes: &[u8], ks: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let fastest = fastest_node(topo, nodes);
    ks.iter()
        .map(|&k| {
            let mut w = vec![1u8; topo.nr_nodes()];
            w[fastest] = k;
            (k, w)
        })
        .collect()
}

/// The node of `nodes` with the highest `min(read, write)` bandwidth (lowest id on ties).
pub fn fastest_node(topo: &Topology, nodes: &[u8]) -> usize {
    let perf = |n: usize| {
        let nd = &topo.nodes[n];
        node_perf_mbps(
            nd.read_bandwidth.bytes_per_s(),
            nd.write_bandwidth.bytes_per_s(),
        )
    };
    nodes
        .iter()
        .map(|&n| n as usize)
        .max_by_key(|&n| (perf(n), std::cmp::Reverse(n)))
        .unwrap_or(0)
}

/// The `auto` weights of a machine (every node reports its bandwidth).
pub fn auto_weights(topo: &Topology) -> Vec<u8> {
    let bw: Vec<(f64, f64)> = topo
        .nodes
        .iter()
        .map(|n| {
            (
                n.read_bandwidth.bytes_per_s(),
                n.write_bandwidth.bytes_per_s(),
            )
        })
        .collect();
    weights_from_bandwidth(&bw)
}

/// A copy of `cfg` with the given weights written (6.16 semantics, manual mode).
pub fn with_weights(cfg: &SimConfig, weights: &[u8]) -> SimConfig {
    let mut c = cfg.clone();
    c.kernel.weighted_interleave.semantics = Some(WeightSemantics::V6_16);
    c.kernel.weighted_interleave.auto = None;
    c.kernel.weighted_interleave.weights = Some(weights.to_vec());
    c
}

/// Run the sweep `k = 1..=max_weight` and the auto weights for workload `w` of `cfg`,
/// maximising `metric` (a `summary.json` path such as `workloads[0].triad_mbps`).
#[allow(
    clippy::expect_used,
    reason = "the auto candidate is always in the sweep"
)]
pub fn tune_weights(
    cfg: &SimConfig,
    w: usize,
    metric_path: &str,
    max_weight: u8,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<TuneResult, SimError> {
    let policy = workload_policy(cfg, w).ok_or_else(|| {
        ConfigError::invalid(
            format!("workloads[{w}].policy"),
            "the tuner needs a weighted_interleave policy (task policy or an mbind)",
        )
    })?;
    if max_weight == 0 {
        return Err(ConfigError::invalid("max_weight", "must be at least 1").into());
    }
    let topo = Topology::new(&cfg.machine)?;
    let nodes: Vec<u8> = policy.nodes.iter().map(|n| n.0).collect();
    let ks: Vec<u8> = (1..=max_weight).collect();
    let mut jobs: Vec<(Option<u8>, Vec<u8>)> = candidate_weights(&topo, &nodes, &ks)
        .into_iter()
        .map(|(k, w)| (Some(k), w))
        .collect();
    jobs.push((None, auto_weights(&topo)));
    let configs: Vec<SimConfig> = jobs.iter().map(|(_, w)| with_weights(cfg, w)).collect();
    let values = run_parallel(&configs, metric_path, progress)?;
    let mut sweep: Vec<Candidate> = jobs
        .into_iter()
        .zip(values)
        .map(|((k, weights), value)| Candidate { weights, k, value })
        .collect();
    let auto = sweep.pop().expect("the auto candidate was added");
    let best = sweep
        .iter()
        .fold(None::<&Candidate>, |b, c| match b {
            Some(b) if b.value >= c.value => Some(b),
            _ => Some(c),
        })
        .expect("at least one candidate")
        .clone();
    Ok(TuneResult {
        metric: metric_path.to_string(),
        nodes,
        sweep,
        best,
        auto,
    })
}

#[allow(
    clippy::expect_used,
    reason = "serialising tiermem's own result types cannot fail"
)]
fn run_parallel(
    configs: &[SimConfig],
    metric_path: &str,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<f64>, SimError> {
    crate::experiment::run_all(configs, &|done, n, _| progress(done, n))
        .into_iter()
        .map(|r| {
            let res = r?;
            let v = serde_json::to_value(&res.summary).expect("summary serialises");
            metric(&v, metric_path).ok_or_else(|| {
                ConfigError::invalid(
                    "metric",
                    format!("no metric {metric_path:?} in the summary"),
                )
                .into()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_put_k_on_the_fastest_node() {
        let v = tiermem_core::presets::machine_value("ddr5-cxl4").unwrap();
        let m = tiermem_core::config::typed(v, "machine").unwrap();
        let topo = Topology::new(&m).unwrap();
        let c = candidate_weights(&topo, &[1, 0, 3], &[1, 9]);
        assert_eq!(c[1], (9, vec![9, 1, 1, 1, 1]));
        assert_eq!(fastest_node(&topo, &[2, 3]), 2);
        // min(382, 217) = 217000 vs 4 × min(17, 13) = 13000 MB/s: 32·217/269 = 25, 32·13/269 = 1.
        assert_eq!(auto_weights(&topo), vec![25, 1, 1, 1, 1]);
    }

    #[test]
    fn the_tuner_finds_a_mostly_dram_split_on_a_small_stream() {
        let cfg = SimConfig::from_toml_str(
            "machine = \"ddr5-cxl\"\nduration = \"1s\"\n[sim]\ntick = \"50us\"\n\
             [[workloads]]\ntype = \"stream\"\narray_elements = 1000000\nthreads = 16\nntimes = 3\n\
             nt_stores = true\npolicy = { mode = \"weighted_interleave\", nodes = [0, 1] }\n",
            "t",
        )
        .unwrap();
        let r = tune_weights(&cfg, 0, "workloads[0].triad_mbps", 6, &|_, _| {}).unwrap();
        assert_eq!(r.sweep.len(), 6);
        // 1:1 is the worst split on a 9:1 bandwidth machine; more DRAM weight is better.
        assert!(r.best.k.unwrap() >= 4, "{:?}", r.best);
        assert!(
            r.sweep[0].value < r.best.value * 0.7,
            "1:1 {} vs best {}",
            r.sweep[0].value,
            r.best.value
        );
        assert_eq!(r.auto.weights, vec![29, 2]);
    }
}
