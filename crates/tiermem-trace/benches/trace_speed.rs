//! Speed and size of the trace pipeline, printed as figures (`cargo bench -p tiermem-trace`):
//! Lackey text import (lines per wall second, one core), compressed bytes per access, and
//! streaming decode (records per second).
//!
//! The input is a synthetic Lackey trace of `TIERMEM_BENCH_LINES` lines (default 50
//! million) written to a temporary directory: a loop body of 48 instructions, 35 % of them
//! with a data access (half to the stack, 30 % walking an array, 20 % random lookups in a
//! 64 MiB hash table), loads:stores:modifies 7:2:1, the shape of a hash/sort program.

use std::io::Write;
use std::time::Instant;
use tiermem_trace::format::{self, TraceWriter};
use tiermem_trace::lackey::{self, LackeyOptions};

fn hexw(out: &mut Vec<u8>, v: u64, width: usize) {
    let mut tmp = [b'0'; 16];
    let mut n = 0;
    let mut x = v;
    while x > 0 || n < width {
        tmp[n] = b"0123456789abcdef"[(x & 15) as usize];
        x >>= 4;
        n += 1;
    }
    out.extend(tmp[..n].iter().rev());
}

fn generate(path: &std::path::Path, lines: u64) {
    let mut f = std::io::BufWriter::with_capacity(1 << 22, std::fs::File::create(path).unwrap());
    let mut s = 0x1234_5678_9abc_def1u64;
    let mut rnd = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut buf = Vec::with_capacity(1 << 22);
    let (mut pc, mut arr) = (0u64, 0u64);
    let mut n = 0;
    buf.extend_from_slice(b"==4242== Lackey, an example Valgrind tool\n");
    while n < lines {
        buf.extend_from_slice(b"I  ");
        hexw(&mut buf, 0x0040_1000 + pc * 4, 8);
        buf.extend_from_slice(b",4\n");
        pc = (pc + 1) % 48;
        n += 1;
        let r = rnd();
        if r % 100 < 35 && n < lines {
            let k = (r >> 8) % 10;
            buf.extend_from_slice(match k {
                0..=6 => b" L ",
                7 | 8 => b" S ",
                _ => b" M ",
            });
            let w = (r >> 16) % 10;
            let addr = if w < 5 {
                0x1f_feff_f000 + ((r >> 24) % 512) * 8
            } else if w < 8 {
                arr = (arr + 8) % (256 << 20);
                0x0500_0000 + arr
            } else {
                0x1_0000_0000 + (((r >> 20) % (64 << 20)) & !7)
            };
            hexw(&mut buf, addr, 8);
            buf.extend_from_slice(b",8\n");
            n += 1;
        }
        if buf.len() > (1 << 22) - 64 {
            f.write_all(&buf).unwrap();
            buf.clear();
        }
    }
    f.write_all(&buf).unwrap();
    f.flush().unwrap();
}

/// CPU time of this process so far (ns), from `/proc/self/schedstat`: on a shared machine
/// the wall-clock rate understates the single-core speed, so both are printed.
fn cpu_ns() -> f64 {
    std::fs::read_to_string("/proc/self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(f64::NAN)
}

fn main() {
    let lines: u64 = std::env::var("TIERMEM_BENCH_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000_000);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trace.tmt");
    let t = Instant::now();
    // TIERMEM_BENCH_TEXT: the Lackey file to import (generated there if missing, and kept).
    let txt = match std::env::var_os("TIERMEM_BENCH_TEXT") {
        Some(p) => {
            let p = std::path::PathBuf::from(p);
            if !p.exists() {
                generate(&p, lines);
            }
            p
        }
        None => {
            let txt = dir.path().join("lackey.txt");
            generate(&txt, lines);
            txt
        }
    };
    let text_bytes = std::fs::metadata(&txt).unwrap().len();
    eprintln!(
        "input: {} ({:.0} MB), prepared in {:.1} s",
        txt.display(),
        text_bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    // Import: read + parse + encode + zstd + write.
    let t = Instant::now();
    let c0 = cpu_ns();
    let input = std::fs::File::open(&txt).unwrap();
    let output = std::io::BufWriter::new(std::fs::File::create(&out).unwrap());
    let mut w = TraceWriter::new(output, lackey::TIME_UNIT, "lackey: bench").unwrap();
    let st = lackey::import(input, "lackey.txt", &mut w, LackeyOptions::default()).unwrap();
    let footer = w.finish().unwrap();
    let secs = t.elapsed().as_secs_f64();
    let cpu = (cpu_ns() - c0) / 1e9;
    let size = std::fs::metadata(&out).unwrap().len();
    println!(
        "lackey import: {} lines, {} accesses in {:.2} s = {:.1} M lines per wall second ({:.0} MB/s of text); {:.2} CPU s = {:.1} M lines per CPU second",
        st.lines,
        st.accesses,
        secs,
        st.lines as f64 / secs / 1e6,
        text_bytes as f64 / secs / 1e6,
        cpu,
        st.lines as f64 / cpu / 1e6
    );
    println!(
        "trace size: {} bytes = {:.2} bytes/access ({} pages, {} ranges)",
        size,
        size as f64 / footer.records as f64,
        footer.pages,
        footer.ranges.len()
    );
    // Streaming decode.
    let t = Instant::now();
    let (mut r, _) = format::open(&out).unwrap();
    let mut n = 0u64;
    let mut sum = 0u64;
    while let Some(rec) = r.next_record().unwrap() {
        n += 1;
        sum = sum.wrapping_add(rec.addr);
    }
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(n, footer.records);
    println!(
        "decode: {n} records in {:.2} s = {:.1} M records/s (checksum {sum:x})",
        secs,
        n as f64 / secs / 1e6
    );
}
