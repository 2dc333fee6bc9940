//! `/proc/zoneinfo`, parsed once for every reader: the live agent's headroom, the workload
//! runner's per-zone timeline columns and `tiermem validate`'s pageset start state.
//!
//! The file has one section per zone (`Node 0, zone    DMA32`) with the zone's free pages
//! (`pages free`), its watermarks (`min`, `low`, `high`, and `promo` since 6.1, indented
//! `name value` lines), `managed`, and per CPU a pageset with `count:` and `high:` (note
//! the colon, which tells the pageset's `high:` from the watermark `high`).

/// One zone's section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneInfo {
    pub node: u32,
    /// The zone's name as the kernel prints it (`DMA`, `DMA32`, `Normal`, `Movable`, …).
    pub zone: String,
    /// `pages free`: the buddy allocator's free pages (pagesets not included).
    pub free: u64,
    pub min: u64,
    pub low: u64,
    pub high: u64,
    /// `WMARK_PROMO` (Linux 6.1+); `None` on older kernels.
    pub promo: Option<u64>,
    pub managed: u64,
    /// Pages in the per-CPU pagesets, summed over CPUs (`count:` lines).
    pub pcp_count: u64,
    /// The pagesets' `high:` marks, summed over CPUs.
    pub pcp_high: u64,
}

/// Every zone section of a `/proc/zoneinfo` text, in file order. Lines that do not parse
/// are skipped: the file's other fields change between releases.
pub fn parse(text: &str) -> Vec<ZoneInfo> {
    let mut out: Vec<ZoneInfo> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("Node ") {
            let mut parts = rest.splitn(2, ',');
            let node = parts.next().and_then(|n| n.trim().parse().ok());
            let zone = parts
                .next()
                .and_then(|z| z.trim().strip_prefix("zone"))
                .map(|z| z.trim().to_string());
            if let (Some(node), Some(zone)) = (node, zone) {
                out.push(ZoneInfo {
                    node,
                    zone,
                    ..ZoneInfo::default()
                });
            }
            continue;
        }
        let Some(z) = out.last_mut() else { continue };
        let mut it = t.split_whitespace();
        let (Some(key), Some(value)) = (it.next(), it.next()) else {
            continue;
        };
        // "pages free N": the value is the third word.
        if key == "pages" && value == "free" {
            if let Some(v) = it.next().and_then(|v| v.parse().ok()) {
                z.free = v;
            }
            continue;
        }
        let Ok(v) = value.parse::<u64>() else {
            continue;
        };
        match key {
            "min" => z.min = v,
            "low" => z.low = v,
            "high" => z.high = v,
            "promo" => z.promo = Some(v),
            "managed" => z.managed = v,
            "count:" => z.pcp_count += v,
            "high:" => z.pcp_high += v,
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
Node 0, zone      DMA
  per-node stats
      nr_inactive_anon 12
  pages free     3776
        boost    0
        min      12
        low      15
        high     18
        promo    21
        spanned  4095
        present  3998
        managed  3840
        protection: (0, 991, 991, 991, 991)
      nr_free_pages 3776
  pagesets
    cpu: 0
              count: 0
              high:  0
              batch: 1
  vm stats threshold: 4
    cpu: 1
              count: 2
              high:  6
              batch: 1
  node_unreclaimable:  0
Node 0, zone    DMA32
  pages free     5041
        min      827
        low      1080
        high     1333
        promo    1586
        managed  253788
  pagesets
    cpu: 0
              count: 4488
              high:  5171
    cpu: 1
              count: 1302
              high:  5171
Node 1, zone   Normal
  pages free     0
";

    #[test]
    fn zones_watermarks_and_pagesets() {
        let z = parse(SAMPLE);
        assert_eq!(z.len(), 3);
        assert_eq!((z[0].node, z[0].zone.as_str(), z[0].free), (0, "DMA", 3776));
        assert_eq!(
            (z[0].min, z[0].low, z[0].high, z[0].promo),
            (12, 15, 18, Some(21))
        );
        assert_eq!((z[0].pcp_count, z[0].pcp_high), (2, 6));
        assert_eq!(
            (z[1].zone.as_str(), z[1].free, z[1].managed),
            ("DMA32", 5041, 253788)
        );
        assert_eq!((z[1].pcp_count, z[1].pcp_high), (5790, 10342));
        assert_eq!(
            (z[2].node, z[2].zone.as_str(), z[2].promo),
            (1, "Normal", None)
        );
    }

    #[test]
    fn garbage_gives_no_zones() {
        assert!(parse("pages free 12\nnonsense\n").is_empty());
    }
}
