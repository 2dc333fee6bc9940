//! Block reader for the text importers: hands out large blocks of whole lines (each block
//! ends with `\n`), so parsers scan bytes without per-line allocation or bounds surprises.

use crate::TraceError;
use std::io::Read;

/// Block size (and the longest accepted line).
pub(crate) const BLOCK: usize = 4 << 20;

pub(crate) struct Blocks<R: Read> {
    r: R,
    name: String,
    buf: Vec<u8>,
    /// Bytes of `buf` holding data; `[keep..len)` is the partial line carried over.
    len: usize,
    keep: usize,
    eof: bool,
    /// Byte offset of `buf[0]` in the input.
    pub(crate) base: u64,
}

impl<R: Read> Blocks<R> {
    pub(crate) fn new(r: R, name: &str) -> Self {
        Blocks {
            r,
            name: name.to_string(),
            buf: vec![0; BLOCK + 1],
            len: 0,
            keep: 0,
            eof: false,
            base: 0,
        }
    }

    /// The next block of whole lines; the last line of the input gets a `\n` if it lacked
    /// one. `None` at the end.
    pub(crate) fn next_block(&mut self) -> Result<Option<&[u8]>, TraceError> {
        // Move the partial line to the front.
        self.base += self.keep as u64;
        self.buf.copy_within(self.keep..self.len, 0);
        self.len -= self.keep;
        self.keep = 0;
        while !self.eof && self.len < BLOCK {
            match self.r.read(&mut self.buf[self.len..BLOCK]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.len += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(TraceError::Read {
                        path: self.name.clone(),
                        source: e,
                    })
                }
            }
        }
        if self.len == 0 {
            return Ok(None);
        }
        match self.buf[..self.len].iter().rposition(|&c| c == b'\n') {
            Some(k) => {
                self.keep = k + 1;
            }
            None if self.eof => {
                self.buf[self.len] = b'\n';
                self.len += 1;
                self.keep = self.len;
            }
            None => {
                return Err(TraceError::offset(
                    &self.name,
                    self.base,
                    format!("a line longer than {BLOCK} bytes: not a text trace"),
                ))
            }
        }
        Ok(Some(&self.buf[..self.keep]))
    }
}

/// Hex digit values, 0xFF for other bytes.
pub(crate) static HEX: [u8; 256] = {
    let mut t = [0xFFu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// Parse hex digits at `b[*i..]` (at most 16). `None` when there are none or too many.
#[inline(always)]
pub(crate) fn hex(b: &[u8], i: &mut usize) -> Option<u64> {
    let start = *i;
    let mut v = 0u64;
    while let Some(&c) = b.get(*i) {
        let d = HEX[c as usize];
        if d == 0xFF {
            break;
        }
        v = (v << 4) | d as u64;
        *i += 1;
    }
    let n = *i - start;
    if n == 0 || n > 16 {
        return None;
    }
    Some(v)
}

/// Parse decimal digits at `b[*i..]` into a u32; `None` when none or overflowing.
#[inline(always)]
pub(crate) fn dec(b: &[u8], i: &mut usize) -> Option<u32> {
    let start = *i;
    let mut v = 0u64;
    while let Some(&c) = b.get(*i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v * 10 + d as u64;
        if v > u32::MAX as u64 {
            return None;
        }
        *i += 1;
    }
    if *i == start {
        return None;
    }
    Some(v as u32)
}

/// Index just past the next `\n` at or after `i` (the block always ends with one).
#[inline]
pub(crate) fn skip_line(b: &[u8], i: usize) -> usize {
    match b[i..].iter().position(|&c| c == b'\n') {
        Some(k) => i + k + 1,
        None => b.len(),
    }
}
