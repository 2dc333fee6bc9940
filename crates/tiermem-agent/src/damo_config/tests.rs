use super::*;
use crate::config::AgentConfig;

/// `damo args damon --format json` of damo v3.3.0 (recorded by running it): `--ops vaddr
/// --target_pid 1 --damos_action pageout --damos_access_rate 0% 0% --damos_age 5s max
/// --damos_quotas 10ms 128M 1s 0 3 7 --damos_wmarks free_mem_rate 5s 500 400 200
/// --damos_filter reject anon --damos_apply_interval 1s`.
const DAMO_3_3_PAGEOUT: &str = r#"{"kdamonds":[{"refresh_ms":0,"contexts":[{"ops":"vaddr","addr_unit":"1 B",
 "targets":[{"pid":1,"obsolete":false,"regions":[]}],
 "intervals":{"sample_us":"5 ms","aggr_us":"100 ms","ops_update_us":"1 s",
   "intervals_goal":{"access_bp":"0 %","aggrs":"0","min_sample_us":"0 ns","max_sample_us":"0 ns"}},
 "nr_regions":{"min":"10","max":"1,000"},"probes":[],
 "sample_control":{"primitives_enabled":{"page_table":true,"page_fault":false},"sample_filters":[]},
 "pause":false,
 "schemes":[{"action":"pageout","dests":[],
  "access_pattern":{"sz_bytes":{"min":"0 B","max":"max"},"nr_accesses":{"min":"0 %","max":"0 %"},"age":{"min":"5 s","max":"max"}},
  "apply_interval_us":"1 s",
  "quotas":{"time_ms":"10 ms","sz_bytes":"128.000 MiB","reset_interval_ms":"1 s","fail_charge_num":"0","fail_charge_denom":"0",
   "goals":[],"goal_tuner":"consist","effective_sz_bytes":"0 B",
   "weights":{"sz_permil":"0 %","nr_accesses_permil":"0.3 %","age_permil":"0.7 %"}},
  "watermarks":{"metric":"free_mem_rate","interval_us":"5 s","high_permil":"50 %","mid_permil":"40 %","low_permil":"20 %"},
  "filters":[{"filter_type":"anon","matching":true,"allow":false,"memcg_path":null,"address_range":null,"damon_target_idx":null,"hugepage_size":null}]}]}]}]}"#;

/// damo v3.3.0's paddr context with its default `stat` scheme and a quota goal.
const DAMO_3_3_PADDR: &str = r#"{"kdamonds":[{"contexts":[{"ops":"paddr",
 "targets":[{"pid":null,"obsolete":false,"regions":[{"start":"4,096","end":"26,843,545,600"}]}],
 "intervals":{"sample_us":"5 ms","aggr_us":"100 ms","ops_update_us":"1 s"},
 "nr_regions":{"min":"10","max":"1,000"},
 "schemes":[{"action":"stat",
  "access_pattern":{"sz_bytes":{"min":"0 B","max":"max"},"nr_accesses":{"min":"0 %","max":"18,446,744,073,709,551,615 %"},"age":{"min":"0 ns","max":"max"}},
  "apply_interval_us":"0 ns",
  "quotas":{"time_ms":"0 ns","sz_bytes":"0 B","reset_interval_ms":"max",
   "goals":[{"metric":"node_mem_used_bp","nid":"0","memcg_path":null,"target_value":"9,970","current_value":"0"}],
   "weights":{"sz_permil":"0 %","nr_accesses_permil":"0 %","age_permil":"0 %"}},
  "watermarks":{"metric":"none","interval_us":"0 ns","high_permil":"0 %","mid_permil":"0 %","low_permil":"0 %"},
  "filters":[{"filter_type":"addr","matching":true,"allow":true,"address_range":{"start":"4,096","end":"8,388,608"}}]}]}]}]}"#;

/// damo v2.4.9's shape: `state`/`pid` keys, `apply_interval_us` a bare float, no `allow`.
const DAMO_2_4: &str = r#"{"kdamonds":[{"state":null,"pid":null,"contexts":[{"ops":"vaddr",
 "targets":[{"pid":4242,"regions":[]}],
 "intervals":{"sample_us":"10 ms","aggr_us":"200 ms","ops_update_us":"1 s"},
 "nr_regions":{"min":"10","max":"1,000"},
 "schemes":[{"action":"cold",
  "access_pattern":{"sz_bytes":{"min":"4.000 KiB","max":"max"},"nr_accesses":{"min":"0 %","max":"10 %"},"age":{"min":"6 s","max":"max"}},
  "apply_interval_us":1000000.0,
  "quotas":{"time_ms":"0 ns","sz_bytes":"1.000 GiB","reset_interval_ms":"1 s","goals":[],
   "weights":{"sz_permil":"0 %","nr_accesses_permil":"0 %","age_permil":"0 %"}},
  "watermarks":{"metric":"none","interval_us":"0 ns","high_permil":"0 %","mid_permil":"0 %","low_permil":"0 %"},
  "filters":[]}]}]}]}"#;

fn doc(s: &str) -> Value {
    serde_json::from_str(s).unwrap()
}

fn roundtrip(d: &DamonConfig) {
    // export then import: the same table.
    let back = import(&export(d).unwrap(), None, None).unwrap();
    assert_eq!(&back, d, "export → import changed the table");
    // The TOML `damon import` prints parses as the agent's own config to the same table.
    let text = to_toml(d);
    let cfg = AgentConfig::from_toml_str(&text, "imported.toml")
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(
        cfg.damon.as_ref(),
        Some(d),
        "TOML changed the table:\n{text}"
    );
}

#[test]
fn damo_3_3_pageout_scheme_in_kernel_units() {
    let d = import(&doc(DAMO_3_3_PAGEOUT), None, None).unwrap();
    assert_eq!(d.ops, OpsKind::Vaddr);
    assert_eq!(d.targets.pids, vec![1]);
    assert_eq!(
        (d.attrs.sample_us, d.attrs.aggr_us, d.attrs.update_us),
        (5000, 100_000, 1_000_000)
    );
    assert_eq!((d.attrs.min_nr_regions, d.attrs.max_nr_regions), (10, 1000));
    let s = &d.schemes[0];
    assert_eq!(s.action, DamosAction::Pageout);
    let p = &s.access_pattern;
    assert_eq!((p.min_sz, p.max_sz), (0, u64::MAX));
    assert_eq!((p.min_nr_accesses, p.max_nr_accesses), (0, 0));
    // 5 s of age is 50 aggregation intervals of 100 ms.
    assert_eq!((p.min_age, p.max_age), (50, u32::MAX));
    assert_eq!(s.apply_interval_us, 1_000_000);
    assert_eq!(
        (s.quotas.ms, s.quotas.sz, s.quotas.reset_interval_ms),
        (10, 128 << 20, 1000)
    );
    let w = &s.quotas.weights;
    assert_eq!((w.sz_permil, w.nr_accesses_permil, w.age_permil), (0, 3, 7));
    let m = &s.watermarks;
    assert_eq!(m.metric, WmarkMetric::FreeMemRate);
    assert_eq!(
        (m.interval_us, m.high, m.mid, m.low),
        (5_000_000, 500, 400, 200)
    );
    assert_eq!(
        s.filters,
        vec![FilterConfig::new(FilterType::Anon, true, false)]
    );
    roundtrip(&d);
}

#[test]
fn damo_paddr_regions_goals_and_address_filters() {
    let d = import(&doc(DAMO_3_3_PADDR), None, None).unwrap();
    assert_eq!(d.ops, OpsKind::Paddr);
    assert_eq!(
        d.regions,
        vec![AddrRange {
            start: 4096,
            end: 26_843_545_600
        }]
    );
    let s = &d.schemes[0];
    assert_eq!(s.action, DamosAction::Stat);
    assert_eq!(
        s.access_pattern,
        AccessPattern::default(),
        "damo's defaults are ours"
    );
    assert_eq!(
        s.quotas.reset_interval_ms,
        i64::MAX as u64,
        "damo's max, as TOML holds it"
    );
    let g = &s.quotas.goals[0];
    assert_eq!(
        (g.metric, g.target_value, g.nid),
        (GoalMetric::NodeMemUsedBp, 9970, Some(NodeId(0)))
    );
    let f = &s.filters[0];
    assert_eq!((f.kind, f.allow), (FilterType::Addr, true));
    assert_eq!(
        f.addr,
        Some(AddrRange {
            start: 4096,
            end: 8 << 20
        })
    );
    roundtrip(&d);
}

#[test]
fn damo_2_4_shape_with_samples_and_aggr_intervals() {
    let d = import(&doc(DAMO_2_4), None, None).unwrap();
    assert_eq!(d.targets.pids, vec![4242]);
    let s = &d.schemes[0];
    let p = &s.access_pattern;
    // 200 ms / 10 ms = 20 samples per aggregation: 10 % is 2 samples; 6 s is 30 aggregations.
    assert_eq!(
        (p.min_sz, p.min_nr_accesses, p.max_nr_accesses),
        (4096, 0, 2)
    );
    assert_eq!(p.min_age, 30);
    assert_eq!(s.apply_interval_us, 1_000_000);
    assert_eq!(s.quotas.sz, 1 << 30);
    roundtrip(&d);
}

#[test]
fn access_rates_in_percent_samples_or_bare_percent() {
    // 20 samples per aggregation: 50 % is 10 samples, a bare 100 is 100 % (damo's
    // `text_to_percent`); the kernel's units are taken as they are.
    let rates = |min: &str, max: &str| {
        let text = DAMO_2_4.replace(
            r#""nr_accesses":{"min":"0 %","max":"10 %"}"#,
            &format!(r#""nr_accesses":{{"min":{min},"max":{max}}}"#),
        );
        let d = import(&doc(&text), None, None).unwrap();
        let p = &d.schemes[0].access_pattern;
        (p.min_nr_accesses, p.max_nr_accesses)
    };
    assert_eq!(rates(r#""50 %""#, "100"), (10, 20));
    assert_eq!(rates(r#""3 samples""#, r#""7 samples""#), (3, 7));
    let text = DAMO_2_4.replace(
        r#""age":{"min":"6 s""#,
        r#""age":{"min":"12 aggr_intervals""#,
    );
    assert_eq!(
        import(&doc(&text), None, None).unwrap().schemes[0]
            .access_pattern
            .min_age,
        12
    );
}

#[test]
fn what_cannot_be_carried_over_is_refused_with_its_key() {
    let two = format!(
        r#"{{"kdamonds": [{0}, {0}]}}"#,
        &DAMO_2_4[r#"{"kdamonds":["#.len()..DAMO_2_4.len() - 2]
    );
    let e = import(&doc(&two), None, None).unwrap_err().to_string();
    assert!(e.contains("2 kdamonds") && e.contains("--kdamond"), "{e}");
    assert!(import(&doc(&two), Some(1), None).is_ok());
    let e = import(&doc(&two), Some(2), None).unwrap_err().to_string();
    assert!(e.contains("no kdamond 2"), "{e}");

    let dests = DAMO_3_3_PAGEOUT.replace(r#""dests":[]"#, r#""dests":[{"id":1,"weight":1}]"#);
    let e = import(&doc(&dests), None, None).unwrap_err().to_string();
    assert!(
        e.contains("kdamonds[0].contexts[0].schemes[0].dests"),
        "{e}"
    );

    let huge = DAMO_3_3_PAGEOUT.replace(
        r#""filter_type":"anon""#,
        r#""filter_type":"hugepage_size""#,
    );
    let e = import(&doc(&huge), None, None).unwrap_err().to_string();
    assert!(
        e.contains("filters[0].filter_type") && e.contains("hugepage_size"),
        "{e}"
    );

    let unit = DAMO_3_3_PAGEOUT.replace(
        r#""min":"0 %","max":"0 %""#,
        r#""min":"0 hits","max":"0 %""#,
    );
    let e = import(&doc(&unit), None, None).unwrap_err().to_string();
    assert!(
        e.contains("nr_accesses.min") && e.contains("`%` or `samples`"),
        "{e}"
    );

    let paused = DAMO_3_3_PAGEOUT.replace(r#""pause":false"#, r#""pause":true"#);
    let e = import(&doc(&paused), None, None).unwrap_err().to_string();
    assert!(e.contains("contexts[0].pause"), "{e}");

    let unit = DAMO_3_3_PAGEOUT.replace(r#""aggr_us":"100 ms""#, r#""aggr_us":"100 fortnights""#);
    let e = import(&doc(&unit), None, None).unwrap_err().to_string();
    assert!(
        e.contains("intervals.aggr_us") && e.contains("unknown time unit"),
        "{e}"
    );
}

#[test]
fn export_refuses_targets_damo_cannot_name() {
    let mut d = import(&doc(DAMO_2_4), None, None).unwrap();
    d.targets.names = vec!["redis-server".into()];
    let e = export(&d).unwrap_err().to_string();
    assert!(e.contains("damon.targets"), "{e}");
}

#[test]
fn damo_text_values() {
    let at = At("x".into());
    let t = |s: &str, unit| text_time(&Value::String(s.into()), unit, &at).unwrap();
    assert_eq!(t("1 m 30.500 s", 1_000_000), 90_500);
    assert_eq!(t("5.5 ms", 1000), 5500);
    assert_eq!(t("250", 1000), 250, "a bare number is in the field's unit");
    assert_eq!(t("max", 1000), u64::MAX);
    let b = |s: &str| text_bytes(&Value::String(s.into()), &at).unwrap();
    assert_eq!(b("128.000 MiB"), 128 << 20);
    assert_eq!(b("4K"), 4096);
    assert_eq!(b("26,843,545,600"), 26_843_545_600);
    let pm = |s: &str| text_share(&Value::String(s.into()), 1000.0, &at).unwrap();
    assert_eq!((pm("0.3 %"), pm("50 %"), pm("7")), (3, 500, 7));
    assert_eq!(share(3, 10), "0.3 %");
    assert_eq!(share(9970, 100), "99.70 %");
    assert_eq!(share(500, 10), "50 %");
}

/// The real damo read what `export` wrote: `damo args damon --format json --kdamonds
/// EXPORTED.json` of damo 3.4.3 (pip), re-rendered in damo's own text form, saved under
/// `testdata/`. Importing damo's rendering gives back the table that was exported.
#[test]
fn damo_3_4_3_reads_the_export_back_to_the_same_table() {
    for (original, rendered) in [
        (
            DAMO_3_3_PAGEOUT,
            include_str!("testdata/damo-3-3-pageout.exported.damo-3.4.3.json"),
        ),
        (
            DAMO_3_3_PADDR,
            include_str!("testdata/damo-3-3-paddr.exported.damo-3.4.3.json"),
        ),
        (
            DAMO_2_4,
            include_str!("testdata/damo-2-4.exported.damo-3.4.3.json"),
        ),
    ] {
        let table = import(&doc(original), None, None).unwrap();
        let via_damo = import(&doc(rendered), None, None).unwrap();
        assert_eq!(via_damo, table);
    }
}
