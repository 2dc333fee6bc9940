//! DAMON monitoring records: the regions of every aggregation interval, as `damo record`
//! keeps them. Written by `tiermem damon record` (the kernel's regions, through a `stat`
//! scheme's tried regions) and by the simulator (`record = true` on a context: the regions
//! `kdamond_reset_aggregated` passes to the `damon_aggregated` tracepoint); read by
//! `tiermem report` and `tiermem trace import --format damo`.
//!
//! The file is damo's JSON record (damo 3.x, `damo record --output_type json`): a bare list
//! with one record per monitoring target:
//!
//! ```text
//! [{"kdamond_idx": 0, "context_idx": 0, "scheme_idx": null, "target_id": 0,
//!   "intervals": {"sample_us": 5000, "aggr_us": 100000, "ops_update_us": 1000000},
//!   "snapshots": [{"start_time": NS, "end_time": NS, "total_bytes": B,
//!                  "regions": [{"start": A, "end": A,
//!                               "nr_accesses": {"samples": N, "percent": null},
//!                               "age": {"usec": null, "aggr_intervals": N}}]}],
//!   "data_source": "..."}]
//! ```
//!
//! Times are ns since the recording started, addresses bytes (virtual for vaddr, physical
//! for paddr), `nr_accesses` the samples of the aggregation interval that found the region
//! accessed, `age` the aggregation intervals its access rate has kept.

use crate::damon::Region;
use serde_json::{json, Value};

/// One monitoring target's snapshots.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DamonRecord {
    pub kdamond_idx: usize,
    pub context_idx: usize,
    pub target_id: u64,
    pub sample_us: u64,
    pub aggr_us: u64,
    pub ops_update_us: u64,
    pub snapshots: Vec<RecordSnapshot>,
}

/// The regions of one aggregation interval.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordSnapshot {
    pub start_ns: u64,
    pub end_ns: u64,
    pub regions: Vec<Region>,
}

impl DamonRecord {
    /// Samples one aggregation interval takes (`aggr / sample`): the `nr_accesses` of a
    /// region accessed at every check.
    pub fn max_nr_accesses(&self) -> u64 {
        (self.aggr_us / self.sample_us.max(1)).max(1)
    }

    /// The record as damo writes it; `source` becomes `data_source`.
    pub fn to_damo(&self, source: &str) -> Value {
        let snapshots: Vec<Value> = self
            .snapshots
            .iter()
            .map(|s| {
                let regions: Vec<Value> = s
                    .regions
                    .iter()
                    .map(|r| {
                        json!({
                            "start": r.start,
                            "end": r.end,
                            "nr_accesses": {"samples": r.nr_accesses, "percent": null},
                            "age": {"usec": null, "aggr_intervals": r.age},
                        })
                    })
                    .collect();
                json!({
                    "start_time": s.start_ns,
                    "end_time": s.end_ns,
                    "regions": regions,
                    "total_bytes": s.regions.iter().map(Region::len).sum::<u64>(),
                })
            })
            .collect();
        json!({
            "kdamond_idx": self.kdamond_idx,
            "context_idx": self.context_idx,
            "scheme_idx": null,
            "target_id": self.target_id,
            "intervals": {
                "sample_us": self.sample_us,
                "aggr_us": self.aggr_us,
                "ops_update_us": self.ops_update_us,
            },
            "snapshots": snapshots,
            "data_source": source,
        })
    }
}

/// Records as one damo JSON document.
pub fn to_damo_json(records: &[DamonRecord], source: &str) -> String {
    let list: Vec<Value> = records.iter().map(|r| r.to_damo(source)).collect();
    Value::Array(list).to_string()
}

/// Bytes of host memory a record of `snapshots` snapshots of up to `regions` regions takes
/// (for estimates before a long recording).
pub fn estimated_bytes(snapshots: u64, regions: u64) -> u64 {
    snapshots.saturating_mul(
        (regions.saturating_mul(std::mem::size_of::<Region>() as u64))
            .saturating_add(std::mem::size_of::<RecordSnapshot>() as u64),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damo_shape() {
        let r = DamonRecord {
            sample_us: 5000,
            aggr_us: 100_000,
            ops_update_us: 1_000_000,
            snapshots: vec![RecordSnapshot {
                start_ns: 0,
                end_ns: 100_000_000,
                regions: vec![Region {
                    start: 4096,
                    end: 8192,
                    nr_accesses: 3,
                    age: 7,
                }],
            }],
            ..Default::default()
        };
        assert_eq!(r.max_nr_accesses(), 20);
        let v: Value = serde_json::from_str(&to_damo_json(&[r], "test")).unwrap();
        let s = &v[0]["snapshots"][0];
        assert_eq!(s["regions"][0]["nr_accesses"]["samples"], 3);
        assert_eq!(s["regions"][0]["age"]["aggr_intervals"], 7);
        assert_eq!(s["total_bytes"], 4096);
        assert_eq!(v[0]["intervals"]["aggr_us"], 100_000);
    }
}
