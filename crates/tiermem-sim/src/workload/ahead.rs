//! Generating a thread's accesses ahead, on another core.
//!
//! Some generators draw their stream from nothing but their own state and random numbers:
//! no feedback from the kernel model, the clock or other threads (pmbench's loop is one).
//! For those, a producer thread runs [`Generator::next`] ahead of the engine and hands over
//! chunks of steps through a bounded channel; the engine replays the steps in order. The
//! producer owns the generator and its random stream, so the draws are the same in the
//! same order as inline: results are byte-identical, and the engine's core spends no time
//! on drawing pages (41 % of a pmbench run's time, `docs/performance.md`).
//!
//! Memory: at most [`DEPTH`] + 2 chunks of [`CHUNK_ACCESSES`] accesses (8 bytes each) per
//! thread, 640 KiB, and at most [`MAX_PRODUCERS`] producers per simulation.

use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

use rand_xoshiro::Xoshiro256PlusPlus;

use super::{Access, Generator, Step};

/// Accesses per chunk: a channel hand-over every 16 Ki accesses (a few hundred µs of
/// engine time), so its cost (a few µs) is lost in the noise.
pub const CHUNK_ACCESSES: usize = 16 * 1024;
/// Steps per chunk at most, for generators that return steps without accesses.
const CHUNK_STEPS: usize = 1024;
/// Chunks ready and waiting per thread.
pub const DEPTH: usize = 3;
/// Producer threads one simulation may start: 64 × 640 KiB of chunks at most (40 MiB). A
/// run with more open-loop threads generates inline (with that many, the cores are shared
/// anyway).
pub const MAX_PRODUCERS: usize = 64;

/// Steps of a generator, in order: `steps[i]` is the i-th step and the end of its accesses
/// in `accesses` (each starts where the previous ended).
#[derive(Default)]
struct Chunk {
    steps: Vec<(Step, usize)>,
    accesses: Vec<Access>,
}

/// The engine's end of a generator that runs ahead on a producer thread.
pub struct Ahead {
    /// `None` once dropped (closing it stops the producer).
    rx: Option<Receiver<Chunk>>,
    /// Replayed chunks go back for reuse.
    recycle: Sender<Chunk>,
    cur: Chunk,
    next_step: usize,
    /// The generator's [`Generator::stores_load_first`], fixed at the start.
    stores_load_first: bool,
    producer: Option<JoinHandle<()>>,
}

impl Ahead {
    /// Move `gen` and its random stream to a producer thread, as [`Generator::Ahead`]. Only
    /// for generators whose [`Generator::is_open_loop`] holds, and whose stream nothing else
    /// draws from. If no thread can be started, `gen` comes back to run inline.
    pub fn spawn(gen: Generator, rng: Xoshiro256PlusPlus) -> Generator {
        let stores_load_first = gen.stores_load_first();
        let (tx, rx) = mpsc::sync_channel(DEPTH);
        let (recycle, recycled) = mpsc::channel();
        // The generator goes over once the thread exists, so a failed start leaves it here.
        let (job_tx, job) = mpsc::channel::<(Generator, Xoshiro256PlusPlus)>();
        let started = std::thread::Builder::new()
            .name("tiermem-gen".into())
            .spawn(move || {
                if let Ok((gen, rng)) = job.recv() {
                    produce(gen, rng, &tx, &recycled);
                }
            });
        let producer = match started {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(%e, "no producer thread: the generator runs inline");
                return gen;
            }
        };
        if let Err(mpsc::SendError((gen, _))) = job_tx.send((gen, rng)) {
            return gen;
        }
        Generator::Ahead(Box::new(Ahead {
            rx: Some(rx),
            recycle,
            cur: Chunk::default(),
            next_step: 0,
            stores_load_first,
            producer: Some(producer),
        }))
    }

    pub fn stores_load_first(&self) -> bool {
        self.stores_load_first
    }

    /// The generator's next step, its accesses in `out` (cleared first), as
    /// [`Generator::next`] would have given it.
    pub fn next(&mut self, out: &mut Vec<Access>) -> Step {
        out.clear();
        if self.next_step >= self.cur.steps.len() {
            let Some(chunk) = self.rx.as_ref().and_then(|rx| rx.recv().ok()) else {
                return self.producer_gone();
            };
            let used = std::mem::replace(&mut self.cur, chunk);
            // The producer may have finished: then nothing is recycled.
            let _ = self.recycle.send(used);
            self.next_step = 0;
        }
        let start = match self.next_step {
            0 => 0,
            i => self.cur.steps[i - 1].1,
        };
        let (step, end) = self.cur.steps[self.next_step];
        self.next_step += 1;
        out.extend_from_slice(&self.cur.accesses[start..end]);
        step
    }

    /// The producer stopped sending: re-raise its panic; if it ended normally (after
    /// `Done`), the generator stays done.
    #[cold]
    fn producer_gone(&mut self) -> Step {
        if let Some(h) = self.producer.take() {
            if let Err(panic) = h.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Step::Done
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        // Closing the channel makes the producer's next send fail, and it returns.
        self.rx = None;
        if let Some(h) = self.producer.take() {
            let _ = h.join();
        }
    }
}

/// The producer: fill chunks until the generator is done or the engine hangs up.
fn produce(
    mut gen: Generator,
    mut rng: Xoshiro256PlusPlus,
    tx: &SyncSender<Chunk>,
    recycled: &Receiver<Chunk>,
) {
    let mut batch = Vec::with_capacity(256);
    loop {
        let mut chunk = recycled.try_recv().unwrap_or_else(|_| Chunk {
            steps: Vec::with_capacity(CHUNK_ACCESSES / 128),
            accesses: Vec::with_capacity(CHUNK_ACCESSES + 1024),
        });
        chunk.steps.clear();
        chunk.accesses.clear();
        let mut done = false;
        while chunk.accesses.len() < CHUNK_ACCESSES && chunk.steps.len() < CHUNK_STEPS {
            let step = gen.next(&mut rng, &mut batch);
            chunk.accesses.extend_from_slice(&batch);
            chunk.steps.push((step, chunk.accesses.len()));
            if step == Step::Done {
                done = true;
                break;
            }
        }
        if tx.send(chunk).is_err() || done {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::PmbenchGen;
    use rand_core::SeedableRng;
    use tiermem_core::config::PmbenchConfig;
    use tiermem_core::units::Bytes;

    fn pmbench() -> Generator {
        let cfg = PmbenchConfig {
            mapsize: Bytes(64 << 20),
            initialize: true,
            ..Default::default()
        };
        Generator::Pmbench(PmbenchGen::new(&cfg, 0))
    }

    /// The same steps and accesses as generating inline, across chunk boundaries and
    /// the phases (initialisation, warm-up, run start, run).
    #[test]
    fn ahead_replays_the_inline_stream() {
        let rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut inline = pmbench();
        let mut inline_rng = rng.clone();
        let mut ahead = Ahead::spawn(pmbench(), rng);
        assert!(matches!(ahead, Generator::Ahead(_)));
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let (mut steps, mut accesses, mut run_started) = (0, 0, false);
        // 16 Ki initialising writes, 64 Ki warm-up draws (uniform: 4N), then the run.
        while accesses < 10 * CHUNK_ACCESSES + 1000 {
            let s1 = inline.next(&mut inline_rng, &mut a);
            let s2 = ahead.next(&mut Xoshiro256PlusPlus::seed_from_u64(0), &mut b);
            assert_eq!((s1, &a), (s2, &b), "step {steps}");
            run_started |= s1 == Step::RunStart;
            steps += 1;
            accesses += a.len();
        }
        assert!(run_started && steps > 10 * CHUNK_ACCESSES / 256);
    }

    /// Dropping the engine's end stops the producer (the drop joins it).
    #[test]
    fn dropping_stops_the_producer() {
        let rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut ahead = Ahead::spawn(pmbench(), rng);
        assert!(matches!(ahead, Generator::Ahead(_)));
        let mut out = Vec::new();
        ahead.next(&mut Xoshiro256PlusPlus::seed_from_u64(0), &mut out);
        drop(ahead);
    }
}
