//! The hardware's side of the model: how long memory accesses take.
//!
//! * [`timing`]: per timing window, each node's loaded latency from the traffic the
//!   workloads and the kernel put on it (the machine's latency curves), solved as a closed
//!   loop with the threads' memory-level parallelism.
//! * [`cache`]: the CPU caches a replayed trace goes through before memory.

pub mod cache;
pub mod timing;
