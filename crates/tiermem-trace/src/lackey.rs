//! Valgrind Lackey `--trace-mem=yes` text (`workload-models.md` §8).
//!
//! Line forms: `I  04014073,3` (instruction fetch: two spaces), ` L 1fff000668,8` (load),
//! ` S …` (store), ` M …` (modify: load and store of one location). The address is hex
//! without `0x`, the size decimal bytes. `==pid==` lines are Valgrind's own messages and are
//! skipped. Lackey has no clock and no thread ids: time is the count of `I` lines so far
//! (replay turns it into time with a CPI), and every access is thread 0.
//!
//! The parser is a hand-written byte scanner over 4 MiB blocks of whole lines (no regex, no
//! per-line allocation); it imports well above 20 million lines per second on one core
//! (`cargo bench -p tiermem-trace`).

use crate::format::{TimeUnit, TraceWriter};
use crate::textbuf::{dec, hex, skip_line, Blocks};
use crate::{ImportStats, Kind, Record, TraceError};
use std::io::{Read, Write};

/// Lackey import options.
#[derive(Clone, Copy, Debug, Default)]
pub struct LackeyOptions {
    /// Also record instruction fetches (`I` lines) as reads of the code pages.
    pub ifetch: bool,
    /// Skip (and count) malformed lines instead of stopping at the first.
    pub lenient: bool,
}

/// The time unit of imported Lackey traces.
pub const TIME_UNIT: TimeUnit = TimeUnit::Instructions;

/// Import Lackey text from `input` into `w`. `name` names the input in errors.
pub fn import<R: Read, W: Write>(
    input: R,
    name: &str,
    w: &mut TraceWriter<W>,
    opts: LackeyOptions,
) -> Result<ImportStats, TraceError> {
    let mut blocks = Blocks::new(input, name);
    let mut st = ImportStats::default();
    let mut instr = 0u64;
    while let Some(b) = blocks.next_block()? {
        let mut i = 0;
        let n = b.len();
        while i < n {
            st.lines += 1;
            let c = b[i];
            // Every line ends with '\n', so the look-aheads below stay in the block
            // whenever the byte before them is not '\n'.
            let ok = if c == b' ' {
                let kind = match b[i + 1] {
                    b'L' => Some(Kind::Read),
                    b'S' => Some(Kind::Write),
                    b'M' => Some(Kind::Modify),
                    _ => None,
                };
                match kind {
                    Some(kind) if b[i + 2] == b' ' => {
                        let mut j = i + 3;
                        match parse_addr_size(b, &mut j) {
                            Some((addr, size)) => {
                                w.push(&Record {
                                    time: instr,
                                    thread: 0,
                                    addr,
                                    size,
                                    kind,
                                })?;
                                st.accesses += 1;
                                i = j;
                                true
                            }
                            None => false,
                        }
                    }
                    _ => false,
                }
            } else if c == b'I' {
                if b[i + 1] == b' ' && b[i + 2] == b' ' {
                    let mut j = i + 3;
                    match parse_addr_size(b, &mut j) {
                        Some((addr, size)) => {
                            instr += 1;
                            st.instructions += 1;
                            if opts.ifetch {
                                w.push(&Record {
                                    time: instr,
                                    thread: 0,
                                    addr,
                                    size,
                                    kind: Kind::Read,
                                })?;
                                st.accesses += 1;
                            }
                            i = j;
                            true
                        }
                        None => false,
                    }
                } else {
                    false
                }
            } else if c == b'=' && b[i + 1] == b'=' {
                st.skipped += 1;
                i = skip_line(b, i);
                true
            } else if c == b'\n' {
                st.skipped += 1;
                i += 1;
                true
            } else {
                false
            };
            if !ok {
                if !opts.lenient {
                    let end = skip_line(b, i);
                    let text = String::from_utf8_lossy(&b[i..end - 1]);
                    let shown: String = text.chars().take(60).collect();
                    return Err(TraceError::line(
                        name,
                        st.lines,
                        format!("not a Lackey line: {shown:?} (expected `I  addr,size`, ` L addr,size`, ` S …`, ` M …` or `==pid==`)"),
                    ));
                }
                st.malformed += 1;
                st.skipped += 1;
                i = skip_line(b, i);
            }
        }
    }
    Ok(st)
}

/// `hexaddr,size\n`: returns them and leaves `*j` past the newline.
#[inline(always)]
fn parse_addr_size(b: &[u8], j: &mut usize) -> Option<(u64, u32)> {
    let addr = hex(b, j)?;
    if b[*j] != b',' {
        return None;
    }
    *j += 1;
    let size = dec(b, j)?;
    if b[*j] != b'\n' || size == 0 {
        return None;
    }
    *j += 1;
    Some((addr, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, opts: LackeyOptions) -> Result<(ImportStats, Vec<Record>), TraceError> {
        crate::format::import_and_read(TIME_UNIT, |w| import(text.as_bytes(), "in.txt", w, opts))
    }

    #[test]
    fn parses_every_line_form() {
        let text = "==123== Lackey, an example Valgrind tool\nI  04014073,3\n L 1fff000668,8\nI  04014076,5\n S 04a2b010,4\n M 1fff0006a0,16\n\n==123== done";
        let (st, v) = run(text, LackeyOptions::default()).unwrap();
        assert_eq!(st.lines, 8);
        assert_eq!(st.accesses, 3);
        assert_eq!(st.instructions, 2);
        assert_eq!(st.skipped, 3);
        assert_eq!(
            v[0],
            Record {
                time: 1,
                thread: 0,
                addr: 0x1fff000668,
                size: 8,
                kind: Kind::Read
            }
        );
        assert_eq!(v[1].kind, Kind::Write);
        assert_eq!((v[1].time, v[1].addr, v[1].size), (2, 0x04a2b010, 4));
        assert_eq!((v[2].kind, v[2].size), (Kind::Modify, 16));
        let (st, v) = run(
            text,
            LackeyOptions {
                ifetch: true,
                lenient: false,
            },
        )
        .unwrap();
        assert_eq!((st.accesses, v.len()), (5, 5));
    }

    #[test]
    fn malformed_lines_name_the_line() {
        for (text, line) in [
            ("I  0401,3\n L zz,8\n", 2),
            (" L 1fff,8\n X 1,1\n", 2),
            (" L 1fff\n", 1),
            (" L 1fff,\n", 1),
            (" L 1fff,8x\n", 1),
            (" L 11112222333344445,8\n", 1),
            ("I 0401,3\n", 1),
            ("garbage\n", 1),
            (" L 1fff,0\n", 1),
            (" L 1fff,99999999999\n", 1),
        ] {
            let e = run(text, LackeyOptions::default()).expect_err(text);
            assert!(
                e.to_string().contains(&format!("in.txt: line {line}:")),
                "{text:?}: {e}"
            );
        }
    }

    #[test]
    fn truncated_last_line_is_an_error_and_lenient_skips() {
        let e = run(" L 1fff,8\n S 20", LackeyOptions::default())
            .err()
            .unwrap();
        assert!(e.to_string().contains("line 2"), "{e}");
        let (st, v) = run(
            " L 1fff,8\n S 20\n junk\n M 10,4",
            LackeyOptions {
                ifetch: false,
                lenient: true,
            },
        )
        .unwrap();
        assert_eq!((st.malformed, v.len()), (2, 2));
        // A final line without newline that is complete is fine.
        let (_, v) = run(" L 1fff,8", LackeyOptions::default()).unwrap();
        assert_eq!(v.len(), 1);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, .. Default::default() })]
        /// Arbitrary bytes never panic; they import or give a line-numbered error.
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            let ok = crate::format::fails_only_with_a_line(TIME_UNIT, &data, |d, w, lenient| {
                import(d, "fuzz", w, LackeyOptions { ifetch: true, lenient })
            });
            proptest::prop_assert!(ok);
        }

        /// Lines built from the grammar import with the right counts.
        #[test]
        fn generated_lines_round_trip(lines in proptest::collection::vec((0u8..4, 0u64..u64::MAX, 1u32..100), 0..200)) {
            let mut text = String::new();
            let mut want = Vec::new();
            let mut instr = 0;
            for (k, a, s) in &lines {
                match k {
                    0 => { text += &format!("I  {a:08x},{s}\n"); instr += 1; }
                    1 => { text += &format!(" L {a:x},{s}\n"); want.push((instr, *a, *s, Kind::Read)); }
                    2 => { text += &format!(" S {a:x},{s}\n"); want.push((instr, *a, *s, Kind::Write)); }
                    _ => { text += &format!(" M {a:X},{s}\n"); want.push((instr, *a, *s, Kind::Modify)); }
                }
            }
            let (_, v) = run(&text, LackeyOptions::default()).unwrap();
            let got: Vec<_> = v.iter().map(|r| (r.time, r.addr, r.size, r.kind)).collect();
            proptest::prop_assert_eq!(got, want);
        }
    }
}
