//! tiermem-policy: the decisions both substrates make, written once.
//!
//! The simulated kernel and the live agent's user-space controller decide the same things:
//! whether a page is hot enough to promote, whether promotion is over its rate limit, and
//! how to move the hot threshold when candidates miss the rate. Those rules live here, pure
//! and substrate-free (time and counts are passed in), so that a change to a rule changes
//! both substrates. See `docs/architecture.md` (the `policy` layer); proactive reclaim
//! moves here next.
//!
//! * [`promotion`]: `numa_promotion_rate_limit`'s window and
//!   `numa_promotion_adjust_threshold`'s step (kernel/sched/fair.c);
//! * [`tiering`]: the user-space tiering controller (promote hot DAMON regions, demote cold
//!   ones) over the [`tiering::MemoryOps`] trait, which both substrates implement.

pub mod promotion;
pub mod tiering;
