//! ChampSim traces (`workload-models.md` §8): a stream of fixed-size little-endian
//! `input_instr` records, one per instruction:
//!
//! | ip u64 | is_branch u8 | branch_taken u8 | dst_regs 2×u8 | src_regs 4×u8 | dst_mem 2×u64 | src_mem 4×u64 |
//!
//! 64 bytes; one upstream revision appends a 1-byte `load_type` (65 bytes). An address of 0
//! marks an unused slot. Each record's source operands become reads and its destination
//! operands writes, at time = record index; ChampSim does not record operand sizes, so
//! each access is [`ChampSimOptions::size`] bytes (8 by default).
//!
//! Published traces are `.champsimtrace.xz`: decompress them first or pipe them in
//! (`xz -dc t.champsimtrace.xz | tiermem trace import --format champsim - out.tmt`).

use crate::format::{TimeUnit, TraceWriter};
use crate::{ImportStats, Kind, Record, TraceError};
use std::io::{Read, Write};

pub const TIME_UNIT: TimeUnit = TimeUnit::Instructions;
/// The standard record size.
pub const RECORD: usize = 64;

#[derive(Clone, Copy, Debug)]
pub struct ChampSimOptions {
    /// Record size: 64 (standard) or 65 (with `load_type`). Default 64.
    pub record_size: usize,
    /// Bytes per access. Default 8.
    pub size: u32,
}

impl Default for ChampSimOptions {
    fn default() -> Self {
        ChampSimOptions {
            record_size: RECORD,
            size: 8,
        }
    }
}

/// Pick the record size from a file length: 64 if it divides the length, else 65 if
/// that does, else an error naming the length.
pub fn record_size_for_len(len: u64, name: &str) -> Result<usize, TraceError> {
    if len.is_multiple_of(64) {
        Ok(64)
    } else if len.is_multiple_of(65) {
        Ok(65)
    } else {
        Err(TraceError::offset(
            name,
            len - len % 64,
            format!("file length {len} is not a multiple of the 64-byte (or 65-byte) ChampSim record: truncated or not a ChampSim trace"),
        ))
    }
}

pub fn import<R: Read, W: Write>(
    mut input: R,
    name: &str,
    w: &mut TraceWriter<W>,
    opts: ChampSimOptions,
) -> Result<ImportStats, TraceError> {
    let rs = opts.record_size;
    if rs != 64 && rs != 65 {
        return Err(TraceError::invalid(
            name,
            format!("record size {rs}: must be 64 or 65"),
        ));
    }
    let mut st = ImportStats::default();
    let per = (1 << 20) / rs;
    let mut buf = vec![0u8; per * rs];
    let mut offset = 0u64;
    let mut first = true;
    loop {
        let mut got = 0;
        while got < buf.len() {
            match input.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(TraceError::Read {
                        path: name.to_string(),
                        source: e,
                    })
                }
            }
        }
        if first && got >= 6 && buf[..6] == [0xFD, b'7', b'z', b'X', b'Z', 0] {
            return Err(TraceError::offset(
                name,
                0,
                "xz-compressed: decompress first (`xz -dc FILE | tiermem trace import --format champsim - OUT`)",
            ));
        }
        first = false;
        let whole = got / rs * rs;
        for rec in buf[..whole].chunks_exact(rs) {
            st.lines += 1;
            st.instructions += 1;
            let u = |k: usize| crate::format::le_u64(&rec[k..k + 8]);
            // Four source (read) addresses at offset 32, then two destination (write) ones at 16.
            let sources = (0..4).map(|s| (u(32 + 8 * s), Kind::Read));
            let destinations = (0..2).map(|d| (u(16 + 8 * d), Kind::Write));
            for (a, kind) in sources.chain(destinations) {
                if a != 0 {
                    w.push(&Record {
                        time: st.instructions,
                        thread: 0,
                        addr: a,
                        size: opts.size.max(1),
                        kind,
                    })?;
                    st.accesses += 1;
                }
            }
        }
        offset += whole as u64;
        if got < buf.len() {
            if got != whole {
                return Err(TraceError::offset(
                    name,
                    offset,
                    format!("truncated record: {} of {rs} bytes at the end", got - whole),
                ));
            }
            return Ok(st);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ip: u64, dst: [u64; 2], src: [u64; 4]) -> Vec<u8> {
        let mut v = ip.to_le_bytes().to_vec();
        v.extend_from_slice(&[0u8; 8]);
        for a in dst.iter().chain(src.iter()) {
            v.extend_from_slice(&a.to_le_bytes());
        }
        assert_eq!(v.len(), 64);
        v
    }

    fn run(data: &[u8], opts: ChampSimOptions) -> Result<Vec<Record>, TraceError> {
        crate::format::import_and_read(TIME_UNIT, |w| import(data, "t.champsim", w, opts))
            .map(|(_, v)| v)
    }

    #[test]
    fn sources_are_reads_destinations_writes() {
        let mut d = rec(0x400000, [0x7000, 0], [0x8000, 0, 0x9000, 0]);
        d.extend(rec(0x400004, [0, 0], [0, 0, 0, 0]));
        d.extend(rec(0x400008, [0, 0xa000], [0, 0, 0, 0]));
        let v = run(&d, ChampSimOptions::default()).unwrap();
        let got: Vec<_> = v.iter().map(|r| (r.time, r.addr, r.kind)).collect();
        assert_eq!(
            got,
            vec![
                (1, 0x8000, Kind::Read),
                (1, 0x9000, Kind::Read),
                (1, 0x7000, Kind::Write),
                (3, 0xa000, Kind::Write)
            ]
        );
    }

    #[test]
    fn truncation_and_xz_are_errors_with_offsets() {
        let mut d = rec(1, [0, 0], [0x10, 0, 0, 0]);
        d.extend_from_slice(&[1, 2, 3]);
        let e = run(&d, ChampSimOptions::default()).err().unwrap();
        assert!(
            e.to_string().contains("byte offset 64: truncated record"),
            "{e}"
        );
        let e = run(
            &[0xFD, b'7', b'z', b'X', b'Z', 0, 1, 2],
            ChampSimOptions::default(),
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("xz"), "{e}");
        assert_eq!(record_size_for_len(130, "x").unwrap(), 65);
        assert!(record_size_for_len(100, "x").is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, .. Default::default() })]
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400), rs in 64usize..66) {
            let mut buf = Vec::new();
            let mut w = TraceWriter::new(&mut buf, TIME_UNIT, "fuzz").unwrap();
            let r = import(&data[..], "fuzz", &mut w, ChampSimOptions { record_size: rs, size: 8 });
            proptest::prop_assert_eq!(r.is_ok(), data.len() % rs == 0 || data.len() < 6 && data.len() % rs == 0);
        }
    }
}
