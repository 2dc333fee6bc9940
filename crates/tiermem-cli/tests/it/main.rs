//! The crate's integration tests, one binary (each file below is a module): one link
//! of the dependency graph instead of one per file.

mod agent_safety;
mod cli;
mod common;
mod docs;
mod module_circles;
mod report;
mod snippets;
mod trace;
