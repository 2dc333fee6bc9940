//! The crate's integration tests, one binary (each file below is a module): one link
//! of the dependency graph instead of one per file.

mod damon;
mod events;
mod page_cache;
mod sim;
mod trace_caches;
mod user_tiering;
