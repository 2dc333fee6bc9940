//! The crate's integration tests, one binary (each file below is a module): one link
//! of the dependency graph instead of one per file.

mod loaded_latency;
mod seeds;
mod seeds_tiering;
mod validation;
