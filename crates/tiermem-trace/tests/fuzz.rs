//! Bounded-time mutation fuzzing of every parser and of the binary reader (cargo-fuzz needs
//! a nightly toolchain and libFuzzer, which CI does not have; this runs on stable).
//!
//! Each target starts from valid seed inputs and applies random byte flips, insertions,
//! deletions, truncations and splices for `TIERMEM_FUZZ_SECS` seconds (default 6). Every
//! input must import or fail with a located error; a panic fails the test and prints the
//! input. Ignored by default (slow); CI runs it with `--include-ignored`.

use std::io::Cursor;
use std::time::{Duration, Instant};
use tiermem_trace::champsim::{self, ChampSimOptions};
use tiermem_trace::damo::{self, DamoOptions};
use tiermem_trace::format::{self, TimeUnit, TraceReader, TraceWriter};
use tiermem_trace::lackey::{self, LackeyOptions};
use tiermem_trace::pinatrace::{self, PinOptions};
use tiermem_trace::{Kind, Record, TraceError};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut d = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(4) {
        let n = d.len();
        match rng.below(6) {
            0 if n > 0 => {
                let i = rng.below(n);
                d[i] ^= 1 << rng.below(8);
            }
            1 if n > 0 => {
                let i = rng.below(n);
                d[i] = rng.next() as u8;
            }
            2 => {
                let i = rng.below(n + 1);
                let b = [b'\n', b' ', b',', b'0', b'f', b'x', b':', b'"', 0, 0xFF][rng.below(10)];
                d.insert(i, b);
            }
            3 if n > 0 => {
                let i = rng.below(n);
                let k = rng.below(n - i).min(16);
                d.drain(i..i + k);
            }
            4 => d.truncate(rng.below(n + 1)),
            _ => {
                let other = &seeds[rng.below(seeds.len())];
                if !other.is_empty() {
                    let a = rng.below(other.len());
                    let b = a + rng.below(other.len() - a).min(64);
                    let i = rng.below(n + 1);
                    d.splice(i..i, other[a..b].iter().copied());
                }
            }
        }
    }
    d
}

fn budget() -> Duration {
    Duration::from_secs_f64(
        std::env::var("TIERMEM_FUZZ_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(6.0),
    )
}

fn fuzz(name: &str, seeds: Vec<Vec<u8>>, mut target: impl FnMut(&[u8]) -> Result<(), TraceError>) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ name.len() as u64);
    let t0 = Instant::now();
    let (mut runs, mut errors) = (0u64, 0u64);
    while t0.elapsed() < budget() {
        let input = mutate(&mut rng, &seeds);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| target(&input)));
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                errors += 1;
                let msg = e.to_string();
                assert!(!msg.is_empty());
            }
            Err(_) => panic!(
                "{name}: panic on input {:?}",
                String::from_utf8_lossy(&input)
            ),
        }
        runs += 1;
    }
    eprintln!(
        "{name}: {runs} inputs in {:.1} s, {errors} rejected with errors",
        t0.elapsed().as_secs_f64()
    );
    assert!(runs > 100);
}

fn sink() -> TraceWriter<Vec<u8>> {
    TraceWriter::new(Vec::new(), TimeUnit::Instructions, "fuzz").unwrap()
}

#[test]
#[ignore = "slow: bounded-time fuzzing (TIERMEM_FUZZ_SECS per target)"]
fn fuzz_lackey() {
    let seeds = vec![
        b"==1== Lackey\nI  04014073,3\n L 1fff000668,8\n S 04a2b010,4\n M 1fff0006a0,16\n".to_vec(),
        b"I  0108d0e0,2\nI  0108d0e2,5\n L 0108f3a8,8\n".to_vec(),
    ];
    fuzz("lackey", seeds, |d| {
        for lenient in [false, true] {
            let mut w = sink();
            lackey::import(
                d,
                "fuzz",
                &mut w,
                LackeyOptions {
                    ifetch: true,
                    lenient,
                },
            )?;
            w.finish()?;
        }
        Ok(())
    });
}

#[test]
#[ignore = "slow: bounded-time fuzzing (TIERMEM_FUZZ_SECS per target)"]
fn fuzz_pinatrace() {
    let seeds = vec![
        b"0x7f5a1c2d: R 0x7ffd1000\n0x7f5a1c2d: W 0x7ffd1000\n0x40: W 0x601040\n#eof\n".to_vec(),
    ];
    fuzz("pinatrace", seeds, |d| {
        for lenient in [false, true] {
            let mut w = sink();
            pinatrace::import(d, "fuzz", &mut w, PinOptions { size: 8, lenient })?;
            w.finish()?;
        }
        Ok(())
    });
}

#[test]
#[ignore = "slow: bounded-time fuzzing (TIERMEM_FUZZ_SECS per target)"]
fn fuzz_champsim() {
    let mut rec = vec![0u8; 128];
    rec[16..24].copy_from_slice(&0x7000u64.to_le_bytes());
    rec[32..40].copy_from_slice(&0x8000u64.to_le_bytes());
    rec[64 + 40..64 + 48].copy_from_slice(&0x9000u64.to_le_bytes());
    fuzz("champsim", vec![rec], |d| {
        for rs in [64, 65] {
            let mut w = sink();
            champsim::import(
                d,
                "fuzz",
                &mut w,
                ChampSimOptions {
                    record_size: rs,
                    size: 8,
                },
            )?;
            w.finish()?;
        }
        Ok(())
    });
}

#[test]
#[ignore = "slow: bounded-time fuzzing (TIERMEM_FUZZ_SECS per target)"]
fn fuzz_damo() {
    let doc = br#"[{"target_id": 0, "intervals": {"sample": "5 ms", "aggr": "100 ms"},
      "snapshots": [{"start_time": "0", "end_time": "100000000",
        "regions": [{"start": "4096", "end": "65536", "nr_accesses": {"samples": 3, "percent": null}, "age": {"usec": null, "aggr_intervals": 1}}]}]}]"#.to_vec();
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut z, &doc).unwrap();
    let zdoc = z.finish().unwrap();
    fuzz("damo", vec![doc, zdoc], |d| {
        let mut w = TraceWriter::new(Vec::new(), TimeUnit::Ns, "fuzz").unwrap();
        damo::import(
            d,
            "fuzz",
            &mut w,
            DamoOptions {
                max_accesses: 1 << 20,
                ..DamoOptions::default()
            },
        )?;
        w.finish()?;
        Ok(())
    });
}

#[test]
#[ignore = "slow: bounded-time fuzzing (TIERMEM_FUZZ_SECS per target)"]
fn fuzz_binary_reader() {
    let mut w = sink();
    for i in 0..5000u64 {
        w.push(&Record {
            time: i / 2,
            thread: (i % 3) as u32,
            addr: 0x1000 + (i * 72) % 100_000,
            size: [1, 8, 3, 64][i as usize % 4],
            kind: Kind::from_bits((i % 3) as u8).unwrap(),
        })
        .unwrap();
    }
    let mut buf = Vec::new();
    {
        let mut w2 = TraceWriter::new(&mut buf, TimeUnit::Instructions, "fuzz").unwrap();
        w2.push(&Record {
            time: 1,
            thread: 0,
            addr: 0x5000,
            size: 8,
            kind: Kind::Read,
        })
        .unwrap();
        w2.finish().unwrap();
    }
    let _ = w.records();
    let mut big = Vec::new();
    {
        let mut w3 = TraceWriter::new(&mut big, TimeUnit::Instructions, "fuzz").unwrap();
        for i in 0..5000u64 {
            w3.push(&Record {
                time: i,
                thread: (i % 2) as u32,
                addr: i * 4160,
                size: 8,
                kind: Kind::Write,
            })
            .unwrap();
        }
        w3.finish().unwrap();
    }
    fuzz("reader", vec![buf, big], |d| {
        let mut c = Cursor::new(d);
        let footer = format::read_footer(&mut c, "fuzz").ok().map(|(_, f)| f);
        let mut r = TraceReader::new(Cursor::new(d), "fuzz")?;
        let mut n = 0u64;
        while r.next_record()?.is_some() {
            n += 1;
        }
        if let Some(f) = footer {
            assert_eq!(
                f.records, n,
                "a trace that reads to its end has the footer's count"
            );
        }
        Ok(())
    });
}
