//! A bounded-time mutation fuzzer on stable Rust: random byte flips, insertions of
//! syntax-bearing bytes, deletions, truncations and splices of the seed inputs.

use std::time::{Duration, Instant};

/// xorshift64: deterministic for a given target name.
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
        match rng.below(7) {
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
                const SYNTAX: &[u8] = b"\n ,0f9x:\"=[]{}.-\0\xFF";
                d.insert(i, SYNTAX[rng.below(SYNTAX.len())]);
            }
            3 if n > 0 => {
                let i = rng.below(n);
                let k = rng.below(n - i).min(16);
                d.drain(i..i + k);
            }
            4 => d.truncate(rng.below(n + 1)),
            5 if n > 0 => {
                // A number grows: the extreme values parsers must refuse.
                let i = rng.below(n);
                if d[i].is_ascii_digit() {
                    let digits = b"999999999999"[..1 + rng.below(12)].to_vec();
                    d.splice(i..i, digits);
                }
            }
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

/// What one bounded run did.
#[derive(Debug)]
pub struct Report {
    pub inputs: u64,
    pub rejected: u64,
    pub secs: f64,
}

/// Run `target` on mutations of `seeds` for `budget`. A panic is returned as `Err` with
/// the input that caused it.
pub fn run_bounded(
    name: &str,
    seeds: &[Vec<u8>],
    target: fn(&[u8]) -> Result<(), String>,
    budget: Duration,
) -> Result<Report, (String, Vec<u8>)> {
    let mut rng =
        Rng(0x9E37_79B9_7F4A_7C15 ^ (name.len() as u64) << 32 ^ name.as_bytes()[0] as u64);
    let t0 = Instant::now();
    let (mut inputs, mut rejected) = (0u64, 0u64);
    // The seeds themselves first, then mutations.
    let mut queue: Vec<Vec<u8>> = seeds.to_vec();
    while t0.elapsed() < budget || !queue.is_empty() {
        let input = queue.pop().unwrap_or_else(|| mutate(&mut rng, seeds));
        match std::panic::catch_unwind(|| target(&input)) {
            Ok(Ok(())) => {}
            Ok(Err(msg)) => {
                rejected += 1;
                if msg.is_empty() {
                    return Err(("an error without a message".into(), input));
                }
            }
            Err(p) => {
                let what = tiermem_core::panic_message(p.as_ref());
                return Err((format!("panic: {what}"), input));
            }
        }
        inputs += 1;
    }
    Ok(Report {
        inputs,
        rejected,
        secs: t0.elapsed().as_secs_f64(),
    })
}
