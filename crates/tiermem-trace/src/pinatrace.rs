//! Intel Pin `pinatrace.cpp` output (`pinatrace.out`, `workload-models.md` §8).
//!
//! One line per executed memory operand, `<ip>: R <addr>` or `<ip>: W <addr>`, both
//! printed with `%p` (`0x`-prefixed hex); a read-modify-write operand gives an R and a W
//! line; the file ends with `#eof`. There is no size, time or thread: time is the number
//! of instructions so far, counted as changes of the instruction pointer between
//! consecutive lines (operands of one instruction share it), and the size is
//! [`PinOptions::size`] (8 bytes by default). A file without `#eof` was cut short (the
//! program did not reach Pin's `Fini`) and is an error unless lenient.

use crate::format::{TimeUnit, TraceWriter};
use crate::textbuf::{hex, skip_line, Blocks};
use crate::{ImportStats, Kind, Record, TraceError};
use std::io::{Read, Write};

#[derive(Clone, Copy, Debug)]
pub struct PinOptions {
    /// Bytes per access (pinatrace does not record sizes). Default 8.
    pub size: u32,
    /// Skip malformed lines and accept a missing `#eof`.
    pub lenient: bool,
}

impl Default for PinOptions {
    fn default() -> Self {
        PinOptions {
            size: 8,
            lenient: false,
        }
    }
}

pub const TIME_UNIT: TimeUnit = TimeUnit::Instructions;

#[inline(always)]
fn ptr(b: &[u8], j: &mut usize) -> Option<u64> {
    if b[*j] == b'0' && (b[*j + 1] == b'x' || b[*j + 1] == b'X') {
        *j += 2;
    }
    hex(b, j)
}

/// `0x…: R 0x…\n`; returns (ip, kind, addr) with `*j` past the newline.
#[inline(always)]
fn parse_line(b: &[u8], j: &mut usize) -> Option<(u64, Kind, u64)> {
    let ip = ptr(b, j)?;
    if b[*j] != b':' || b[*j + 1] != b' ' {
        return None;
    }
    let kind = match b[*j + 2] {
        b'R' => Kind::Read,
        b'W' => Kind::Write,
        _ => return None,
    };
    if b[*j + 3] != b' ' {
        return None;
    }
    *j += 4;
    let addr = ptr(b, j)?;
    // Tolerate trailing spaces / CR.
    while b[*j] == b' ' || b[*j] == b'\r' {
        *j += 1;
    }
    if b[*j] != b'\n' {
        return None;
    }
    *j += 1;
    Some((ip, kind, addr))
}

pub fn import<R: Read, W: Write>(
    input: R,
    name: &str,
    w: &mut TraceWriter<W>,
    opts: PinOptions,
) -> Result<ImportStats, TraceError> {
    let mut blocks = Blocks::new(input, name);
    let mut st = ImportStats::default();
    let mut last_ip = None;
    let mut seen_eof = false;
    while let Some(b) = blocks.next_block()? {
        let mut i = 0;
        while i < b.len() {
            st.lines += 1;
            if b[i] == b'#' {
                if b[i..].starts_with(b"#eof") {
                    seen_eof = true;
                }
                st.skipped += 1;
                i = skip_line(b, i);
                continue;
            }
            if b[i] == b'\n' {
                st.skipped += 1;
                i += 1;
                continue;
            }
            let mut j = i;
            match parse_line(b, &mut j) {
                Some((ip, kind, addr)) if !seen_eof => {
                    if last_ip != Some(ip) {
                        last_ip = Some(ip);
                        st.instructions += 1;
                    }
                    w.push(&Record {
                        time: st.instructions,
                        thread: 0,
                        addr,
                        size: opts.size.max(1),
                        kind,
                    })?;
                    st.accesses += 1;
                    i = j;
                }
                parsed => {
                    if !opts.lenient {
                        let msg = if parsed.is_some() {
                            "a memory access after #eof".to_string()
                        } else {
                            let end = skip_line(b, i);
                            let t: String = String::from_utf8_lossy(&b[i..end - 1])
                                .chars()
                                .take(60)
                                .collect();
                            format!("not a pinatrace line: {t:?} (expected `0xIP: R 0xADDR` or `0xIP: W 0xADDR`)")
                        };
                        return Err(TraceError::line(name, st.lines, msg));
                    }
                    st.malformed += 1;
                    st.skipped += 1;
                    i = skip_line(b, i);
                }
            }
        }
    }
    if !seen_eof && !opts.lenient {
        return Err(TraceError::line(
            name,
            st.lines,
            "truncated: no `#eof` line at the end (the traced program did not finish)",
        ));
    }
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, opts: PinOptions) -> Result<Vec<Record>, TraceError> {
        crate::format::import_and_read(TIME_UNIT, |w| {
            import(text.as_bytes(), "pinatrace.out", w, opts)
        })
        .map(|(_, v)| v)
    }

    #[test]
    fn parses_reads_writes_and_instruction_count() {
        let v = run(
            "0x7f5a1c2d: R 0x7ffd1000\n0x7f5a1c2d: W 0x7ffd1000\n0x7f5a1c30: W 0x601040\n#eof\n",
            PinOptions::default(),
        )
        .unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(
            (v[0].time, v[0].kind, v[0].addr, v[0].size),
            (1, Kind::Read, 0x7ffd1000, 8)
        );
        assert_eq!((v[1].time, v[1].kind), (1, Kind::Write));
        assert_eq!((v[2].time, v[2].addr), (2, 0x601040));
    }

    #[test]
    fn errors_name_lines() {
        let e = run("0x1: R 0x2\n0x1: Q 0x2\n#eof\n", PinOptions::default())
            .err()
            .unwrap();
        assert!(e.to_string().contains("pinatrace.out: line 2:"), "{e}");
        let e = run("0x1: R 0x2\n", PinOptions::default()).err().unwrap();
        assert!(e.to_string().contains("truncated"), "{e}");
        let v = run(
            "0x1: R 0x2\n0x1: R\n",
            PinOptions {
                lenient: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(v.len(), 1);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, .. Default::default() })]
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            let ok = crate::format::fails_only_with_a_line(TIME_UNIT, &data, |d, w, lenient| {
                import(d, "fuzz", w, PinOptions { size: 8, lenient })
            });
            proptest::prop_assert!(ok);
        }
    }
}
