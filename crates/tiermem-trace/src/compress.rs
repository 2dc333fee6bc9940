//! Chunk compression on a second thread for [`crate::format::TraceWriter`]: the writer
//! encodes chunk N+1 while chunk N is compressed, so a recorder, the converter and the
//! compressor keep two cores busy (a capture is bound by the converter's CPU time, and
//! zstd is about a third of it). Chunks come back in the order they went in, so the file
//! is byte-identical to compressing inline.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// A chunk to compress: its encoded records and how many records they are.
pub(crate) struct Chunk {
    pub records: u32,
    pub raw: Vec<u8>,
}

/// A compressed chunk and the raw buffer it came from (returned for reuse).
pub(crate) struct Compressed {
    pub records: u32,
    pub raw: Vec<u8>,
    pub comp: Vec<u8>,
}

enum Engine {
    /// zstd on a worker thread; at most one chunk in flight.
    Worker {
        tx: Option<SyncSender<Chunk>>,
        rx: Receiver<std::io::Result<Compressed>>,
        handle: Option<JoinHandle<()>>,
        in_flight: bool,
    },
    /// zstd on the caller's thread (no thread could be started).
    Inline {
        cctx: Box<zstd::bulk::Compressor<'static>>,
        done: Option<std::io::Result<Compressed>>,
    },
}

/// Compresses chunks one behind the caller.
pub(crate) struct ChunkCompressor {
    engine: Engine,
}

fn compressor(level: i32) -> std::io::Result<zstd::bulk::Compressor<'static>> {
    let mut cctx = zstd::bulk::Compressor::new(level)?;
    cctx.include_checksum(true)?;
    Ok(cctx)
}

fn compress(
    cctx: &mut zstd::bulk::Compressor<'static>,
    chunk: Chunk,
) -> std::io::Result<Compressed> {
    let Chunk { records, raw } = chunk;
    let mut comp = Vec::with_capacity(zstd::zstd_safe::compress_bound(raw.len()) + 64);
    cctx.compress_to_buffer(&raw, &mut comp)?;
    Ok(Compressed { records, raw, comp })
}

impl ChunkCompressor {
    pub(crate) fn new(level: i32) -> std::io::Result<Self> {
        let mut cctx = compressor(level)?;
        let (tx, work) = sync_channel::<Chunk>(1);
        let (done, rx) = sync_channel(1);
        let spawned = std::thread::Builder::new()
            .name("trace-zstd".into())
            .spawn(move || {
                for chunk in work {
                    if done.send(compress(&mut cctx, chunk)).is_err() {
                        return;
                    }
                }
            });
        let engine = match spawned {
            Ok(handle) => Engine::Worker {
                tx: Some(tx),
                rx,
                handle: Some(handle),
                in_flight: false,
            },
            Err(_) => Engine::Inline {
                cctx: Box::new(compressor(level)?),
                done: None,
            },
        };
        Ok(ChunkCompressor { engine })
    }

    /// Hand over a chunk; returns the previous one, compressed, if there was one.
    pub(crate) fn submit(&mut self, chunk: Chunk) -> std::io::Result<Option<Compressed>> {
        let previous = self.take()?;
        match &mut self.engine {
            Engine::Worker { tx, in_flight, .. } => {
                let sent = tx.as_ref().is_some_and(|tx| tx.send(chunk).is_ok());
                if !sent {
                    return Err(std::io::Error::other("the trace compressor thread stopped"));
                }
                *in_flight = true;
            }
            Engine::Inline { cctx, done } => *done = Some(compress(cctx, chunk)),
        }
        Ok(previous)
    }

    /// The chunk in flight, compressed (None when there is none).
    pub(crate) fn take(&mut self) -> std::io::Result<Option<Compressed>> {
        match &mut self.engine {
            Engine::Worker { rx, in_flight, .. } => {
                if !*in_flight {
                    return Ok(None);
                }
                *in_flight = false;
                match rx.recv() {
                    Ok(r) => r.map(Some),
                    Err(_) => Err(std::io::Error::other("the trace compressor thread stopped")),
                }
            }
            Engine::Inline { done, .. } => done.take().transpose(),
        }
    }
}

impl Drop for ChunkCompressor {
    fn drop(&mut self) {
        if let Engine::Worker {
            tx,
            handle,
            in_flight,
            rx,
        } = &mut self.engine
        {
            if *in_flight {
                let _ = rx.recv();
            }
            drop(tx.take());
            if let Some(h) = handle.take() {
                let _ = h.join();
            }
        }
    }
}
