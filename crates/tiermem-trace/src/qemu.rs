//! The stream of tiermem's QEMU user-mode plugin (`crates/tiermem-cli/capture/qemu_mem.c`):
//! every guest memory access of every thread with the thread's instruction count.
//!
//! Blocks: a 16-byte header (`TMQ2`, vCPU, word count, flags; bit 0 = the thread's last
//! block) and `count` 8-byte little-endian words. An access word holds the address in bits
//! 0–47, the instructions since the thread's previous access in bits 48–55 (0–254), the
//! access size as a power of two in bits 56–59 and the store flag in bit 60. Bit 61 marks a
//! time word instead (the thread's instruction count in bits 0–55, for longer gaps), bit 62
//! an address word (the next access's full address in bits 0–55, for addresses at or above
//! 2^48). Half the bytes of an {instructions, address} pair per access.
//!
//! Time. Each guest thread (one QEMU vCPU) counts its own instructions; a trace's time must
//! not decrease. A thread's first block starts at the time written so far, and a block that
//! arrives behind it (another thread ran ahead meanwhile) is shifted up to it: every gap
//! between two accesses of one thread is kept but the one at such a block boundary, which
//! becomes 0 (one gap in 65 536 accesses at most). Time is in instructions, so replay turns
//! it into CPU time with the workload's `cpi` as for Lackey traces.
//!
//! QEMU reports a read-modify-write instruction as a load and a store; they stay two
//! accesses (Lackey's `M` is one).

use crate::format::{TimeUnit, TraceWriter};
use crate::{ImportStats, Kind, Record, TraceError};
use std::collections::HashMap;
use std::io::{Read, Write};

/// The time unit of captured traces.
pub const TIME_UNIT: TimeUnit = TimeUnit::Instructions;

const MAGIC: &[u8; 4] = b"TMQ2";
/// Words in one block at most (the plugin's buffer).
pub const MAX_BLOCK: u32 = 65_536;
const WORD: usize = 8;
const ADDR_BITS: u32 = 48;
const LOW48: u64 = (1 << ADDR_BITS) - 1;
const LOW56: u64 = (1 << 56) - 1;
const TIME_WORD: u64 = 1 << 61;
const ADDR_WORD: u64 = 1 << 62;

/// Per-thread time keeping: the thread's instruction count, the offset added to it, and a
/// full address an address word announced for its next access.
#[derive(Default)]
struct ThreadClock {
    insns: u64,
    offset: i128,
    started: bool,
    wide_addr: Option<u64>,
}

/// Import the plugin's stream from `input` into `w`. `name` names the input in errors,
/// which give the byte offset of the bad block.
pub fn import<R: Read, W: Write>(
    mut input: R,
    name: &str,
    w: &mut TraceWriter<W>,
) -> Result<ImportStats, TraceError> {
    let mut st = ImportStats::default();
    let mut clocks: HashMap<u32, ThreadClock> = HashMap::new();
    let mut last = 0u64;
    let mut offset = 0u64;
    let mut head = [0u8; 16];
    let mut body = vec![0u8; MAX_BLOCK as usize * WORD];
    loop {
        match read_full(&mut input, &mut head, name)? {
            0 => break,
            16 => {}
            _ => return Err(truncated(name, offset)),
        }
        if &head[..4] != MAGIC {
            return Err(TraceError::invalid(
                name,
                format!("offset {offset}: not a tiermem QEMU plugin block"),
            ));
        }
        let vcpu = u32_at(&head, 4);
        let count = u32_at(&head, 8);
        if count > MAX_BLOCK {
            return Err(TraceError::invalid(
                name,
                format!("offset {offset}: a block of {count} records (at most {MAX_BLOCK})"),
            ));
        }
        let bytes = count as usize * WORD;
        if read_full(&mut input, &mut body[..bytes], name)? != bytes {
            return Err(truncated(name, offset));
        }
        let clock = clocks.entry(vcpu).or_default();
        for (i, r) in body[..bytes].chunks_exact(WORD).enumerate() {
            let word = u64::from_le_bytes(r.try_into().unwrap_or_default());
            if word & (TIME_WORD | ADDR_WORD) != 0 {
                if word & TIME_WORD != 0 && word & ADDR_WORD != 0 {
                    return Err(TraceError::invalid(
                        name,
                        format!(
                            "offset {}: a word that is both a time and an address",
                            offset + 16 + (i * WORD) as u64
                        ),
                    ));
                }
                if word & TIME_WORD != 0 {
                    clock.insns = word & LOW56;
                } else {
                    clock.wide_addr = Some(word & LOW56);
                }
                continue;
            }
            clock.insns = clock
                .insns
                .saturating_add((word >> ADDR_BITS) & 0xff)
                .min(LOW56);
            if !clock.started {
                clock.started = true;
                clock.offset = last as i128 - clock.insns as i128;
            }
            let mut time = clock.insns as i128 + clock.offset;
            if time < last as i128 {
                clock.offset += last as i128 - time;
                time = last as i128;
            }
            last = time as u64;
            let shift = (word >> 56) & 15;
            w.push(&Record {
                time: last,
                thread: vcpu,
                addr: clock.wide_addr.take().unwrap_or(word & LOW48),
                size: 1 << shift.min(12),
                kind: if word >> 60 & 1 == 1 {
                    Kind::Write
                } else {
                    Kind::Read
                },
            })?;
            st.accesses += 1;
        }
        st.lines += count as u64;
        offset += 16 + bytes as u64;
    }
    st.instructions = last;
    Ok(st)
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

fn truncated(name: &str, offset: u64) -> TraceError {
    TraceError::invalid(
        name,
        format!("offset {offset}: the stream ends inside a block (the capture was cut off)"),
    )
}

/// Read until `buf` is full or the input ends; the bytes read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8], name: &str) -> Result<usize, TraceError> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(TraceError::Read {
                    path: name.to_string(),
                    source: e,
                })
            }
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block of accesses (instructions, address, size shift, store) as the plugin writes
    /// them: gaps over 254 as time words, addresses from 2^48 as address words.
    fn block(vcpu: u32, last: bool, recs: &[(u64, u64, u64, bool)]) -> Vec<u8> {
        let mut words = Vec::new();
        let mut noted = 0;
        for &(insns, addr, shift, store) in recs {
            let mut gap = insns - noted;
            noted = insns;
            if gap > 254 {
                words.push(TIME_WORD | insns);
                gap = 0;
            }
            let mut a = addr;
            if addr >> ADDR_BITS != 0 {
                words.push(ADDR_WORD | addr);
                a = 0;
            }
            words.push(a | gap << ADDR_BITS | shift << 56 | (store as u64) << 60);
        }
        let mut b = Vec::new();
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&vcpu.to_le_bytes());
        b.extend_from_slice(&(words.len() as u32).to_le_bytes());
        b.extend_from_slice(&(last as u32).to_le_bytes());
        for w in words {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b
    }

    fn import_bytes(bytes: &[u8]) -> Result<Vec<Record>, TraceError> {
        let mut out = Vec::new();
        let mut w = TraceWriter::new(&mut out, TIME_UNIT, "test").unwrap();
        import(bytes, "<test>", &mut w)?;
        w.finish().unwrap();
        let (mut r, _) = crate::format::TraceReader::new(std::io::Cursor::new(out), "t")
            .map(|r| (r, ()))
            .unwrap();
        let mut v = Vec::new();
        while let Some(x) = r.next_record().unwrap() {
            v.push(x);
        }
        Ok(v)
    }

    #[test]
    fn threads_keep_their_gaps_and_time_never_goes_back() {
        let mut s = block(0, false, &[(10, 0x1000, 3, false), (20, 0x1008, 3, true)]);
        // Thread 1 starts later with its own count from 0; thread 0's next block is behind.
        s.extend(block(
            1,
            true,
            &[(5, 0x9000, 2, false), (105, 0x9004, 2, false)],
        ));
        s.extend(block(0, true, &[(30, 0x1010, 4, false)]));
        let r = import_bytes(&s).unwrap();
        let times: Vec<u64> = r.iter().map(|x| x.time).collect();
        assert_eq!(times, vec![0, 10, 10, 110, 110]);
        assert_eq!(r[1].kind, Kind::Write);
        assert_eq!((r[0].size, r[2].size, r[4].size), (8, 4, 16));
        assert_eq!((r[2].thread, r[2].addr), (1, 0x9000));
    }

    #[test]
    fn long_gaps_and_wide_addresses_take_their_own_words() {
        let wide = 0x00ff_1234_5678_9000u64;
        let s = block(
            0,
            true,
            &[
                (3, 0x1000, 3, false),
                (1_000_003, wide, 3, true),
                (1_000_010, 0x1008, 2, false),
            ],
        );
        assert_eq!(s.len(), 16 + 5 * 8, "a time word and an address word");
        let r = import_bytes(&s).unwrap();
        let got: Vec<(u64, u64)> = r.iter().map(|x| (x.time, x.addr)).collect();
        assert_eq!(
            got,
            vec![(0, 0x1000), (1_000_000, wide), (1_000_007, 0x1008)]
        );
    }

    #[test]
    fn a_cut_or_foreign_stream_names_the_offset() {
        let s = block(0, true, &[(1, 0x1000, 3, false)]);
        let e = import_bytes(&s[..s.len() - 3]).unwrap_err().to_string();
        assert!(e.contains("offset 0") && e.contains("cut off"), "{e}");
        let mut s2 = s.clone();
        s2.extend_from_slice(b"XXXX0000000000000000");
        let e = import_bytes(&s2).unwrap_err().to_string();
        assert!(
            e.contains("offset 24") && e.contains("not a tiermem"),
            "{e}"
        );
        let mut big = block(0, true, &[]);
        big[8..12].copy_from_slice(&(MAX_BLOCK + 1).to_le_bytes());
        let e = import_bytes(&big).unwrap_err().to_string();
        assert!(e.contains("at most"), "{e}");
    }
}
